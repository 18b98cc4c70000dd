// logging.mlflow's settings as MLflow's clients read them from the environment (the server's
// address, credentials, TLS, the experiment and run), and the REST client's own refusals.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "gputrain/core/error.hpp"
#include "gputrain/train/config.hpp"
#include "support/scratch_folder.hpp"
#include "support/usage_errors.hpp"
#include "train/config/mlflow_settings.hpp"
#include "train/monitor/mlflow_api.hpp"

namespace gputrain::train::mlflow {
namespace {

TEST(MlflowSettings, TheEnvironmentNamesTheServerOnlyForAConfigThatAsksForMlflow) {
  ::setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5999/", 1);
  const auto plain = load_config({{}, {"device=cpu"}, ""});
  EXPECT_TRUE(plain.logging.mlflow.tracking_uri.empty());
  const auto asked = load_config({{}, {"device=cpu", "logging.mlflow.experiment=x"}, ""});
  EXPECT_EQ(asked.logging.mlflow.tracking_uri, "http://127.0.0.1:5999");
  EXPECT_EQ(asked.logging.mlflow.experiment, "x");
  ::unsetenv("MLFLOW_TRACKING_URI");
  EXPECT_THROW(load_config({{}, {"device=cpu", "logging.mlflow.experiment=x"}, ""}), UsageError);
}

// As MLflow's clients read them: MLFLOW_EXPERIMENT_NAME names the experiment, and
// MLFLOW_EXPERIMENT_ID is the experiment where nothing names one, or the id the named one must have.
TEST(MlflowSettings, TheExperimentIdFromTheEnvironmentNamesOrChecksTheExperiment) {
  ::setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5999", 1);
  ::setenv("MLFLOW_EXPERIMENT_ID", "12", 1);
  const auto by_id = load_config({{}, {"device=cpu", "logging.mlflow.run_name=r"}, ""});
  EXPECT_EQ(by_id.logging.mlflow.experiment, "");
  EXPECT_EQ(experiment_id_from_env(by_id.logging.mlflow), "12");
  ::setenv("MLFLOW_EXPERIMENT_NAME", "sweeps", 1);
  const auto both = load_config({{}, {"device=cpu", "logging.mlflow.run_name=r"}, ""});
  EXPECT_EQ(both.logging.mlflow.experiment, "sweeps");
  EXPECT_EQ(experiment_id_from_env(both.logging.mlflow), "12");  // checked against 'sweeps'
  const auto configured = load_config({{}, {"device=cpu", "logging.mlflow.experiment=mine"}, ""});
  EXPECT_EQ(experiment_id_from_env(configured.logging.mlflow), "") << "the config's experiment wins, as set_experiment() does";
  ::unsetenv("MLFLOW_EXPERIMENT_NAME");
  ::unsetenv("MLFLOW_EXPERIMENT_ID");
  EXPECT_EQ(load_config({{}, {"device=cpu", "logging.mlflow.run_name=r"}, ""}).logging.mlflow.experiment, "Default");
  EXPECT_EQ(run_id_from_env(), "");
  EXPECT_EQ(test_support::usage_error([] {
              load_config({{}, {"device=cpu", "logging.mlflow.experiment=" + std::string(501, 'e')}, ""});
            }),
            "config: logging.mlflow.experiment is 501 bytes long; MLflow takes a name of at most 500");
  ::setenv("MLFLOW_RUN_ID", "9f1c", 1);
  EXPECT_EQ(run_id_from_env(), "9f1c");
  ::unsetenv("MLFLOW_RUN_ID");
  ::unsetenv("MLFLOW_TRACKING_URI");
}

TEST(MlflowSettings, RefusesAnAddressThatIsNotAServersAndHidesAPassword) {
  try {
    load_config({{}, {"device=cpu", "logging.mlflow.tracking_uri=file:./mlruns"}, ""});
    FAIL() << "a file store was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("http://"), std::string::npos);
    EXPECT_NE(e.remedy().find("mlflow server"), std::string::npos);
  }
  const auto config = load_config({{}, {"device=cpu", "logging.mlflow.tracking_uri=http://me:secret@127.0.0.1:5000"}, ""});
  EXPECT_EQ(to_yaml(config).find("secret"), std::string::npos);
  EXPECT_EQ(config.logging.mlflow.experiment, "Default");
}

// An address libcurl cannot connect to is a config error at once, named where it came from; a
// well-formed one with no server behind it is not (the server may start later: a warning then).
TEST(MlflowSettings, RefusesAnAddressWithNoHostOrABadPortAndNamesTheEnvironmentWhenItGaveIt) {
  if (url_fault("http://") == "") GTEST_SKIP() << "a build without libcurl: its own error comes at the run's start";
  const auto error_for = [](const std::string& setting) {
    return test_support::usage_error([&] { load_config({{}, {"device=cpu", setting}, ""}); });
  };
  EXPECT_EQ(error_for("logging.mlflow.tracking_uri=http://127.0.0.1:99999"),
            "config: logging.mlflow.tracking_uri is 'http://127.0.0.1:99999', which is not an address to connect to: "
            "Port number was not a decimal number between 0 and 65535");
  EXPECT_NE(error_for("logging.mlflow.tracking_uri=http://[::1:5000").find("Bad IPv6 address"), std::string::npos);
  ::setenv("MLFLOW_TRACKING_URI", "http://", 1);
  EXPECT_EQ(error_for("logging.mlflow.experiment=x"),
            "MLFLOW_TRACKING_URI (logging.mlflow.tracking_uri is unset) is 'http://', which is not an address to connect to: "
            "No host part in the URL");
  EXPECT_EQ(test_support::usage_fix([] {
              load_config({{}, {"device=cpu", "logging.mlflow.experiment=x"}, ""});
            }),
            "export MLFLOW_TRACKING_URI=http://HOST:PORT, e.g. http://127.0.0.1:5000");
  ::unsetenv("MLFLOW_TRACKING_URI");
  EXPECT_EQ(url_fault("http://127.0.0.1:5000/mlflow"), "");
}

// The address of a page of MLflow's UI, copied from the browser: its requests would have got the
// UI's HTML back, and MLflow been switched off for the run as an answer gputrain cannot read.
TEST(MlflowSettings, AnAddressCopiedFromTheWebUiGetsTheServersAddress) {
  const auto fix = test_support::usage_fix([] {
    load_config({{}, {"device=cpu", "logging.mlflow.tracking_uri=http://127.0.0.1:5000/#/experiments/3"}, ""});
  });
  EXPECT_EQ(fix,
            "set logging.mlflow.tracking_uri: http://127.0.0.1:5000, and logging.mlflow.experiment to the name that page shows (ids are "
            "for MLFLOW_EXPERIMENT_ID)");
  const auto error = test_support::usage_error([] {
    load_config({{}, {"device=cpu", "logging.mlflow.tracking_uri=https://ml.example.com/mlflow/#/models"}, ""});
  });
  EXPECT_NE(error.find("the address of a page of MLflow's web UI (the part from '#' on is the page's)"), std::string::npos) << error;
}

// The REST client's own errors show the address as the config and the log do: without its password.
TEST(MlflowRest, AServerThatDoesNotAnswerIsNamedWithItsPasswordMasked) {
  std::unique_ptr<Api> api;
  try {
    api = make_rest_api({"http://alice:s3cret@127.0.0.1:9", 5});  // the discard port: nothing listens
  } catch (const Error& e) {
    GTEST_SKIP() << e.what();
  }
  try {
    api->experiment_id("Default");
    FAIL() << "a server answered on port 9";
  } catch (const ApiError& e) {
    const std::string said = e.what();
    EXPECT_EQ(said.find("s3cret"), std::string::npos) << said;
    EXPECT_NE(said.find("no answer from http://alice:****@127.0.0.1:9"), std::string::npos) << said;
  }
}

// A token read from a file keeps its line break: trimmed, as a header needs it. One with a line
// break inside (which would end the header and start another) is refused before training, and the
// error says where, never what.
TEST(MlflowSettings, ATokensBlanksAreTrimmedAndALineBreakInsideIsRefused) {
  ::setenv("MLFLOW_TRACKING_TOKEN", " tok-123\r\n", 1);
  EXPECT_EQ(tracking_token(), "tok-123");
  ::setenv("MLFLOW_TRACKING_TOKEN", "\n", 1);
  EXPECT_EQ(tracking_token(), std::nullopt);
  ::setenv("MLFLOW_TRACKING_TOKEN", "tok\r\nX-Injected: 1", 1);
  try {
    load_config({{}, {"device=cpu", "logging.mlflow.tracking_uri=http://127.0.0.1:5000"}, ""});
    ADD_FAILURE() << "a token with a line break was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("MLFLOW_TRACKING_TOKEN holds a control character (byte 13 at position 4"), std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find("Injected"), std::string::npos) << "the token's text is not shown";
  }
  EXPECT_NO_THROW(load_config({{}, {"device=cpu"}, ""})) << "a run without MLflow does not read it";
  ::unsetenv("MLFLOW_TRACKING_TOKEN");
}

// An https server's certificate is checked as MLflow's variables say; what MLflow refuses (both
// CERT_PATH and INSECURE_TLS, a value that is no boolean) and a path that is no file are refused
// before training, naming the variable.
TEST(MlflowSettings, TlsVariablesAreReadAsMlflowsClientsReadThem) {
  const auto refused = [](const std::string& expected) {
    try {
      load_config({{}, {"device=cpu", "logging.mlflow.tracking_uri=https://127.0.0.1:5000"}, ""});
      ADD_FAILURE() << "taken; expected: " << expected;
    } catch (const UsageError& e) {
      EXPECT_NE((std::string(e.what()) + "\n" + e.remedy()).find(expected), std::string::npos) << e.what() << "\n" << e.remedy();
    }
  };
  EXPECT_FALSE(tls_settings().insecure);
  ::setenv("MLFLOW_TRACKING_INSECURE_TLS", "True", 1);
  EXPECT_TRUE(tls_settings().insecure);
  ::setenv("MLFLOW_TRACKING_INSECURE_TLS", "yes please", 1);
  refused("MLFLOW_TRACKING_INSECURE_TLS is 'yes please', which is neither true nor false");
  ::setenv("MLFLOW_TRACKING_INSECURE_TLS", "true", 1);
  const test_support::ScratchFolder folder("tls-settings");
  const std::string cert = (folder.path / "ca.pem").string();
  std::ofstream(cert) << "-----BEGIN CERTIFICATE-----\n";
  ::setenv("MLFLOW_TRACKING_SERVER_CERT_PATH", cert.c_str(), 1);
  refused("unset one of them");
  ::unsetenv("MLFLOW_TRACKING_INSECURE_TLS");
  EXPECT_EQ(tls_settings().server_cert, cert);
  ::setenv("MLFLOW_TRACKING_CLIENT_CERT_PATH", (cert + ".gone").c_str(), 1);
  refused("MLFLOW_TRACKING_CLIENT_CERT_PATH is '" + cert + ".gone', which is not a file this user can read");
  ::unsetenv("MLFLOW_TRACKING_CLIENT_CERT_PATH");
  ::unsetenv("MLFLOW_TRACKING_SERVER_CERT_PATH");
}

}  // namespace
}  // namespace gputrain::train::mlflow
