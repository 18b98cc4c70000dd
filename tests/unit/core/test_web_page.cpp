#include <gtest/gtest.h>

#include <string>

#include "core/web_page.hpp"

using namespace gputrain::core;

TEST(WebPage, APageIsKnownByItsMarkupNotItsLabel) {
  EXPECT_TRUE(looks_like_web_page("<!DOCTYPE html>\n<html><head><title>404</title>"));
  EXPECT_TRUE(looks_like_web_page("\n\n  <HTML lang=en>"));
  EXPECT_TRUE(looks_like_web_page("<h1>Bad Gateway</h1>"));
  EXPECT_FALSE(looks_like_web_page("a,b,label\n1,2,0\n"));
  EXPECT_FALSE(looks_like_web_page("{\"error_code\": \"RESOURCE_DOES_NOT_EXIST\"}"));
  EXPECT_FALSE(looks_like_web_page(std::string(300, ' ') + "<html>"));  // past the start: data that mentions a tag
}

TEST(WebPage, APagesGistLeavesMarkupOutAndIsShort) {
  EXPECT_EQ(page_gist("<h1>Bad\n\n Gateway</h1>"), "Bad Gateway");
  EXPECT_EQ(page_gist("<TITLE>Oops</TITLE><p>long text</p>"), "Oops");
  EXPECT_EQ(page_gist(""), "");
  EXPECT_EQ(page_gist("<title>404 &ndash; Hugging Face</title>"), "404 \u2013 Hugging Face");
  EXPECT_EQ(page_gist("<title>Q&amp;A &lt;beta&gt; &unknown;</title>"), "Q&A <beta> &unknown;");
  const auto long_text = page_gist(std::string(300, 'x'));
  EXPECT_EQ(long_text.size(), 160u);
  EXPECT_EQ(long_text.substr(157), "...");
  const auto accented = page_gist(std::string(156, 'x') + "\xC3\xA9\xC3\xA9\xC3\xA9");  // é at the cut: kept whole or left out
  EXPECT_EQ(accented, std::string(156, 'x') + "...");
}
