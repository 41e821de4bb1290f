#include "io/object_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace qmlsim::io {
namespace {

// The example credentials of AWS's documentation.
const S3Credentials kExample = {"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                                ""};
const std::string kEmpty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

TEST(ObjectStore, Sha256AndUriEncoding) {
  EXPECT_EQ(sha256_hex(""), kEmpty);
  EXPECT_EQ(sha256_hex("hello world"),
            "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9");
  EXPECT_EQ(uri_encode("a b/c~d_e.f-g=h+", true), "a%20b/c~d_e.f-g%3Dh%2B");
  EXPECT_EQ(uri_encode("a/b", false), "a%2Fb");
}

// AWS's published example (GET /test.txt with a Range header, the S3 SigV4
// documentation): its signature is f0e8bdb8...
TEST(ObjectStore, SignsAwsDocumentationExample) {
  const std::string auth =
      sigv4_authorization("GET", "/test.txt", {},
                          {{"host", "examplebucket.s3.amazonaws.com"},
                           {"range", "bytes=0-9"},
                           {"x-amz-content-sha256", kEmpty},
                           {"x-amz-date", "20130524T000000Z"}},
                          kEmpty, "20130524T000000Z", "us-east-1", "s3", kExample);
  EXPECT_EQ(auth,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

// Signatures botocore 1.44.8 (S3SigV4Auth) gives for the requests qmlsim makes
// against a path-style endpoint: a PUT with a session token and a key that
// needs encoding, a paged listing, the start of a multipart upload.
TEST(ObjectStore, SignsLikeBotocore) {
  const std::string date = "20261203T181500Z";
  auto headers = [&](const std::string& payload, const std::string& token) {
    std::map<std::string, std::string> h = {
        {"host", "127.0.0.1:5000"}, {"x-amz-content-sha256", payload}, {"x-amz-date", date}};
    if (!token.empty()) h["x-amz-security-token"] = token;
    return h;
  };
  const std::string hello = sha256_hex("hello world");
  S3Credentials with_token = kExample;
  with_token.session_token = "FwoGZXIvYXdzEXAMPLETOKEN";
  EXPECT_EQ(sigv4_authorization("PUT", uri_encode("/runs/qcnn/checkpoints/ckpt 00000003.h5", true),
                                {}, headers(hello, with_token.session_token), hello, date,
                                "eu-west-2", "s3", with_token),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20261203/eu-west-2/s3/aws4_request, "
            "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token, "
            "Signature=20f8c61067332f4182ef5ebb39a53270fe7d841422c0c57aff3a4759bd105e1e");
  EXPECT_EQ(sigv4_authorization(
                "GET", "/runs",
                {{"list-type", "2"}, {"prefix", "qcnn/check"}, {"continuation-token", "a/b=="}},
                headers(kEmpty, ""), kEmpty, date, "us-east-1", "s3", kExample),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20261203/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
            "Signature=52305e80a6accb0dc297bc7dd0301bdc6cc8485f61e0376881518f1d74994797");
  EXPECT_EQ(sigv4_authorization("POST", "/runs/big.h5", {{"uploads", ""}}, headers(kEmpty, ""),
                                kEmpty, date, "us-east-1", "s3", kExample),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20261203/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
            "Signature=ecae63822739a4a800d12bf861db8a85680ac19aad032d0a318edf2a3e92d865");
}

TEST(ObjectStore, ParsesUrls) {
  EXPECT_TRUE(is_s3_url("s3://b/k"));
  EXPECT_FALSE(is_s3_url("runs/s3://x"));
  const S3Location a = parse_s3_url("s3://my-runs.2026/qcnn/ckpt.h5", "--run-dir");
  EXPECT_EQ(a.bucket, "my-runs.2026");
  EXPECT_EQ(a.key, "qcnn/ckpt.h5");
  EXPECT_EQ(a.url(), "s3://my-runs.2026/qcnn/ckpt.h5");
  EXPECT_EQ(parse_s3_url("s3://runs", "x").key, "");
  for (const char* bad : {"s3://", "s3://ab/k", "s3://Runs/k", "s3://-runs/k", "s3://ru_ns/k",
                          "s3://runs/a//b", "http://runs/k"}) {
    try {
      parse_s3_url(bad, "--run-dir");
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("--run-dir: ", 0), 0u) << e.what();
    }
  }
}

// Restores one environment variable at scope exit.
struct EnvVar {
  std::string name;
  std::optional<std::string> old;
  EnvVar(const char* n, const char* value) : name(n) {
    if (const char* v = std::getenv(n)) old = v;
    if (value)
      setenv(n, value, 1);
    else
      unsetenv(n);
  }
  ~EnvVar() {
    if (old)
      setenv(name.c_str(), old->c_str(), 1);
    else
      unsetenv(name.c_str());
  }
};

TEST(ObjectStore, SettingsFromVariablesAndCredentialsFile) {
  const std::string file =
      (std::filesystem::temp_directory_path() / ("qmlsim_creds_" + std::to_string(getpid())))
          .string();
  std::ofstream(file) << "[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = "
                         "s1\n\n[ci]\n# a comment\naws_access_key_id=AKIACI\n"
                         "aws_secret_access_key=s2\naws_session_token = tok\n";
  EnvVar a("AWS_ACCESS_KEY_ID", nullptr), b("AWS_SECRET_ACCESS_KEY", nullptr),
      c("AWS_SESSION_TOKEN", nullptr), d("AWS_SHARED_CREDENTIALS_FILE", file.c_str()),
      e("AWS_PROFILE", "ci"), f("AWS_REGION", "eu-west-2"), g("AWS_DEFAULT_REGION", nullptr),
      h("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000/"), i("AWS_ENDPOINT_URL", nullptr),
      j("QMLSIM_S3_MAX_ATTEMPTS", nullptr), k("QMLSIM_S3_MULTIPART_KIB", nullptr);
  S3Settings s = s3_settings_from_environment();
  EXPECT_EQ(s.credentials.access_key, "AKIACI");
  EXPECT_EQ(s.credentials.secret_key, "s2");
  EXPECT_EQ(s.credentials.session_token, "tok");
  EXPECT_EQ(s.region, "eu-west-2");
  EXPECT_EQ(s.endpoint, "http://127.0.0.1:9000");
  EXPECT_TRUE(s.path_style);
  {
    EnvVar key("AWS_ACCESS_KEY_ID", "AKIAENV"), secret("AWS_SECRET_ACCESS_KEY", "s3cret");
    s = s3_settings_from_environment();
    EXPECT_EQ(s.credentials.access_key, "AKIAENV");
    EXPECT_EQ(s.credentials.session_token, "");
  }
  {
    EnvVar profile("AWS_PROFILE", "missing");
    try {
      s3_settings_from_environment();
      ADD_FAILURE();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("profile 'missing'"), std::string::npos) << e.what();
    }
  }
  {
    EnvVar bad("AWS_ENDPOINT_URL_S3", "127.0.0.1:9000");
    EXPECT_THROW(s3_settings_from_environment(), Error);
  }
  for (const char* url : {"http://KEY:hunter2@127.0.0.1:9000", "ftp://KEY:hunter2@host/x"}) {
    EnvVar bad("AWS_ENDPOINT_URL_S3", url);  // userinfo: refused, the secret never printed
    try {
      s3_settings_from_environment();
      ADD_FAILURE() << url;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("user name or password"), std::string::npos);
    }
  }
  {
    EnvVar bad("QMLSIM_S3_MAX_ATTEMPTS", "0");
    EXPECT_THROW(s3_settings_from_environment(), Error);
  }
  std::filesystem::remove(file);
}

// A server that is not there: a clear error after the retry budget, naming
// the URL and never the secret.
TEST(ObjectStore, UnreachableEndpointFailsWithinTheRetryBudget) {
  S3Settings s;
  s.credentials = {"AKIAEXAMPLE", "do-not-print-this-secret", ""};
  s.endpoint = "http://127.0.0.1:9";  // the discard port: nothing listens
  s.path_style = true;
  s.max_attempts = 3;
  s.backoff_base_s = 0.01;
  const ObjectStore store(s);
  try {
    store.put({"runs", "qcnn/result.json"}, "{}");
    ADD_FAILURE();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("s3://runs/qcnn/result.json"), std::string::npos) << m;
    EXPECT_NE(m.find("after 3 attempts"), std::string::npos) << m;
    EXPECT_EQ(m.find("do-not-print-this-secret"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace qmlsim::io
