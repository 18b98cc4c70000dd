// What an MLflow server's answers mean to the user: each refusal with its fix, and the answers of
// what is not MLflow at all (a sign-in page, another web server). The real servers' side:
// tests/mlflow/check_mlflow_teams.py.
#include <gtest/gtest.h>

#include "train/monitor/mlflow_answers.hpp"

namespace gputrain::train::mlflow {
namespace {

const Asker kAnonymous{"http://mlflow:5000", "", false};

std::string text_of(const ApiError& e) { return e.what(); }

TEST(MlflowAnswers, AServerErrorOrAThrottleIsRetriedAndARefusalIsNot) {
  EXPECT_TRUE(refusal("logging", {503, "", ""}, kAnonymous).retry());
  EXPECT_TRUE(refusal("logging", {429, "", ""}, kAnonymous).retry());
  EXPECT_FALSE(refusal("logging", {400, R"({"error_code":"INVALID_PARAMETER_VALUE","message":"bad key"})", ""}, kAnonymous).retry());
  EXPECT_EQ(text_of(refusal("logging", {400, R"({"error_code":"INVALID_PARAMETER_VALUE","message":"bad key"})", ""}, kAnonymous)),
            "logging: the server answered HTTP 400: bad key");
}

TEST(MlflowAnswers, A401SaysWhichCredentialsTheServerDidNotTake) {
  const Answer no{401, "You are not authenticated.", ""};
  const auto none = text_of(refusal("finding experiment 'e'", no, kAnonymous));
  EXPECT_NE(none.find("HTTP 401 (You are not authenticated.): it asks who is logging: export MLFLOW_TRACKING_USERNAME"), std::string::npos)
      << none;
  const auto user = text_of(refusal("finding experiment 'e'", no, {"http://mlflow:5000", "bob", false}));
  EXPECT_NE(user.find("did not take the password of MLFLOW_TRACKING_USERNAME='bob'"), std::string::npos) << user;
  const auto token = text_of(refusal("finding experiment 'e'", no, {"http://mlflow:5000", "bob", true}));  // the token wins
  EXPECT_NE(token.find("did not take MLFLOW_TRACKING_TOKEN"), std::string::npos) << token;
  const auto in_address = text_of(refusal("finding experiment 'e'", no, {"http://bob:****@mlflow:5000", "", false}));
  EXPECT_NE(in_address.find("did not take the user and password written in the address"), std::string::npos) << in_address;
}

TEST(MlflowAnswers, A403NamesTheUserAndThePermissionToAskFor) {
  const auto said = text_of(refusal("creating a run", {403, "Permission denied", ""}, {"http://m", "bob", false}));
  // MLflow sends this plain text labelled as HTML: judged by its markup, it is no web page.
  EXPECT_EQ(said.rfind("creating a run: the server answered HTTP 403 (Permission denied): user 'bob' lacks MLflow's permission for it.", 0),
            0u)
      << said;
  EXPECT_NE(said.find("may EDIT"), std::string::npos);
  EXPECT_NE(said.find("set logging.mlflow.experiment to a new name"), std::string::npos);
}

TEST(MlflowAnswers, ARedirectOfTheApiGivesTheAddressToUseAndASignInRedirectIsNamed) {
  const auto https =
      refusal("finding experiment 'e'", {301, "", "https://mlflow:5000/api/2.0/mlflow/experiments/get-by-name?x=e"}, kAnonymous);
  EXPECT_FALSE(https.retry());
  EXPECT_NE(
      text_of(https).find("sends its clients to https://mlflow:5000 (HTTP 301): set logging.mlflow.tracking_uri to https://mlflow:5000"),
      std::string::npos)
      << text_of(https);
  // The API's path in a sign-in page's query (where to come back to) is no move of the API.
  const auto sso =
      text_of(refusal("finding experiment 'e'", {302, "", "https://sso.corp/oauth2/start?rd=/api/2.0/mlflow/experiments"}, kAnonymous));
  EXPECT_NE(sso.find("HTTP 302, sending gputrain to https://sso.corp/oauth2/start?rd=/api/2.0/mlflow/experiments, as a sign-in page"),
            std::string::npos)
      << sso;
  EXPECT_NE(sso.find("MLFLOW_TRACKING_TOKEN"), std::string::npos);
}

TEST(MlflowAnswers, A404WithoutMlflowsJsonIsNoTrackingServerButMlflowsOwnIsItsMessage) {
  const auto page = text_of(refusal("finding experiment 'e'", {404, "<html><title>404 Not Found</title></html>", ""}, kAnonymous));
  EXPECT_NE(page.find("http://mlflow:5000 has no MLflow tracking API at /api/2.0/mlflow (HTTP 404, a web page, '404 Not Found')"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("http://host/mlflow"), std::string::npos);
  const auto own =
      text_of(refusal("finding run 1", {404, R"({"error_code":"RESOURCE_DOES_NOT_EXIST","message":"Run '1' not found"})", ""}, kAnonymous));
  EXPECT_EQ(own, "finding run 1: the server answered HTTP 404: Run '1' not found");
}

TEST(MlflowAnswers, AFileTooLargeForAProxyNamesTheProxysLimit) {
  const auto e = refusal("uploading model.safetensors", {413, "<html><head><title>413 Request Entity Too Large</title></head></html>", ""},
                         kAnonymous);
  EXPECT_FALSE(e.retry());
  EXPECT_NE(text_of(e).find("(a web page, '413 Request Entity Too Large'): a proxy in front of MLflow limits the size of a request; "
                            "raise its limit (nginx: client_max_body_size)"),
            std::string::npos)
      << text_of(e);
}

TEST(MlflowAnswers, AWebPageWhereJsonWasDueIsNamedByItsTitle) {
  const Answer page{200, "<!DOCTYPE html>\n<html><head><title>\n  Sign in - Corp SSO </title></head><body>...</body></html>", ""};
  const auto e = not_mlflow("finding experiment 'e'", page, kAnonymous);
  EXPECT_FALSE(e.retry());
  EXPECT_EQ(text_of(e).rfind(
                "finding experiment 'e': http://mlflow:5000 answered with a web page, 'Sign in - Corp SSO', where MLflow answers JSON", 0),
            0u)
      << text_of(e);
}

TEST(MlflowAnswers, DeletedExperimentsAndRunsSayHowToRestoreThem) {
  const auto experiment = deleted_experiment("sweeps", "4", kAnonymous);
  EXPECT_FALSE(experiment.retry());
  EXPECT_FALSE(experiment.run_deleted());
  EXPECT_NE(text_of(experiment).find("experiment 'sweeps' is deleted on the server at http://mlflow:5000"), std::string::npos);
  EXPECT_NE(text_of(experiment).find("MLFLOW_TRACKING_URI=http://mlflow:5000 mlflow experiments restore --experiment-id 4"),
            std::string::npos);
  const auto run = deleted_run("9f1c", kAnonymous);
  EXPECT_TRUE(run.run_deleted());
  EXPECT_NE(text_of(run).find("mlflow runs restore --run-id 9f1c"), std::string::npos);
  const auto with_experiment = deleted_run("9f1c", kAnonymous, "4", "sweeps");
  EXPECT_TRUE(with_experiment.run_deleted());
  EXPECT_NE(text_of(with_experiment)
                .find("with its experiment 'sweeps' (MLFLOW_TRACKING_URI=http://mlflow:5000 mlflow experiments restore "
                      "--experiment-id 4 brings both back)"),
            std::string::npos)
      << text_of(with_experiment);
}

TEST(MlflowAnswers, TheWrongSchemeIsNamedWithTheAddressToUse) {
  EXPECT_TRUE(is_plain_http_handshake("OpenSSL/3.0.19: error:0A00010B:SSL routines::wrong version number"));
  EXPECT_FALSE(is_plain_http_handshake("OpenSSL SSL_connect: Connection reset by peer"));  // may pass: retried
  const auto plain = speaks_plain_http("wrong version number", {"https://mlflow:5000", "", false});
  EXPECT_NE(text_of(plain).find("speaks plain HTTP, not TLS (wrong version number): set logging.mlflow.tracking_uri to http://mlflow:5000"),
            std::string::npos)
      << text_of(plain);
  EXPECT_NE(text_of(speaks_tls(kAnonymous)).find("set logging.mlflow.tracking_uri to https://mlflow:5000"), std::string::npos);
}

}  // namespace
}  // namespace gputrain::train::mlflow
