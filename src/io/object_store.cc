#include "io/object_store.h"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "core/error.h"

namespace qmlsim::io {
namespace fs = std::filesystem;

bool is_s3_url(std::string_view path) { return path.substr(0, 5) == "s3://"; }

S3Location parse_s3_url(const std::string& url, const std::string& where) {
  auto fail = [&](const std::string& why) {
    throw Error(where + ": " + printable(url) + ": " + why);
  };
  if (!is_s3_url(url)) fail("expected s3://BUCKET/KEY");
  const std::string rest = url.substr(5);
  const std::size_t slash = rest.find('/');
  S3Location at{rest.substr(0, slash), slash == std::string::npos ? "" : rest.substr(slash + 1)};
  const std::string& b = at.bucket;
  if (b.size() < 3 || b.size() > 63) fail("a bucket name has 3 to 63 characters");
  for (char c : b)
    if (!(std::islower(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-'))
      fail("a bucket name has only a-z, 0-9, '.' and '-'");
  if (!std::isalnum(static_cast<unsigned char>(b.front())) ||
      !std::isalnum(static_cast<unsigned char>(b.back())))
    fail("a bucket name starts and ends with a letter or digit");
  for (char c : at.key)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) fail("control character in the key");
  if (at.key.find("//") != std::string::npos) fail("empty path segment ('//') in the key");
  return at;
}

void require_path_or_s3_url(const std::string& path, const std::string& where) {
  require_file_path(path, where, true);
  if (is_s3_url(path)) parse_s3_url(path, where);
}

// --- settings

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string trim(const std::string& s) {
  const std::size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// The [profile] section of an AWS shared credentials file; empty if absent.
S3Credentials credentials_file(const std::string& path, const std::string& profile) {
  S3Credentials c;
  std::ifstream in(path);
  std::string section;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']')
        throw Error(path + ":" + std::to_string(line_no) + ": expected [name]");
      section = trim(line.substr(1, line.size() - 2));
      continue;
    }
    if (section != profile) continue;
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos)
      throw Error(path + ":" + std::to_string(line_no) + ": expected key = value");
    const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (key == "aws_access_key_id") c.access_key = value;
    if (key == "aws_secret_access_key") c.secret_key = value;
    if (key == "aws_session_token") c.session_token = value;
  }
  return c;
}

long positive_env(const char* name, long fallback, long max) {
  const std::string v = env(name);
  if (v.empty()) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (*end != '\0' || x < 1 || x > max)
    throw Error(std::string(name) + ": expected a whole number from 1 to " + std::to_string(max) +
                ", got '" + printable(v) + "'");
  return x;
}

}  // namespace

S3Settings s3_settings_from_environment() {
  S3Settings s;
  s.credentials = {env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"),
                   env("AWS_SESSION_TOKEN")};
  if (s.credentials.access_key.empty() || s.credentials.secret_key.empty()) {
    std::string file = env("AWS_SHARED_CREDENTIALS_FILE");
    if (file.empty() && !env("HOME").empty()) file = env("HOME") + "/.aws/credentials";
    const std::string profile = env("AWS_PROFILE").empty() ? "default" : env("AWS_PROFILE");
    if (!file.empty() && fs::exists(file)) s.credentials = credentials_file(file, profile);
    if (s.credentials.access_key.empty() || s.credentials.secret_key.empty())
      throw Error(
          "s3: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or profile '" +
          profile + "' in " + (file.empty() ? "~/.aws/credentials" : file));
  }
  for (const char* name : {"AWS_REGION", "AWS_DEFAULT_REGION"})
    if (const std::string r = env(name); !r.empty()) {
      s.region = r;
      break;
    }
  for (const char* name : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}) {
    std::string e = env(name);
    if (e.empty()) continue;
    while (!e.empty() && e.back() == '/') e.pop_back();
    // userinfo (http://KEY:SECRET@host) would be printed in errors: refused, unprinted.
    if (e.find('@') != std::string::npos)
      throw Error(std::string(name) +
                  ": a user name or password in the endpoint URL is refused (the URL is not "
                  "printed); give credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
    const std::size_t scheme = e.find("://");
    if (scheme == std::string::npos ||
        (e.substr(0, scheme) != "http" && e.substr(0, scheme) != "https") ||
        e.find('/', scheme + 3) != std::string::npos || e.size() == scheme + 3)
      throw Error(std::string(name) + ": expected http(s)://HOST[:PORT], got '" + printable(e) +
                  "'");
    s.endpoint = e;
    s.path_style = true;
    break;
  }
  s.max_attempts = static_cast<int>(positive_env("QMLSIM_S3_MAX_ATTEMPTS", s.max_attempts, 100));
  if (const long kib = positive_env("QMLSIM_S3_MULTIPART_KIB", 0, 1 << 30); kib > 0)
    s.multipart_threshold = s.part_size = static_cast<std::size_t>(kib) << 10;
  return s;
}

// --- signing

namespace {

std::string hex(const unsigned char* p, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}

std::string hmac(const std::string& key, const std::string& data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out, &len, EVP_sha256(), nullptr);
  return hex(out, len);
}

std::string uri_encode(std::string_view s, bool keep_slash) {
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out += ch;
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

namespace {
std::string canonical_query(const std::map<std::string, std::string>& query) {
  std::vector<std::pair<std::string, std::string>> q;
  for (const auto& [k, v] : query) q.emplace_back(uri_encode(k, false), uri_encode(v, false));
  std::sort(q.begin(), q.end());
  std::string out;
  for (const auto& [k, v] : q) out += (out.empty() ? "" : "&") + k + "=" + v;
  return out;
}
}  // namespace

std::string sigv4_authorization(const std::string& method, const std::string& canonical_uri,
                                const std::map<std::string, std::string>& query,
                                const std::map<std::string, std::string>& headers,
                                const std::string& payload_sha256, const std::string& amz_date,
                                const std::string& region, const std::string& service,
                                const S3Credentials& credentials) {
  std::string canonical_headers, signed_headers;
  for (const auto& [name, value] : headers) {  // std::map: sorted by name
    canonical_headers += name + ":" + trim(value) + "\n";
    signed_headers += (signed_headers.empty() ? "" : ";") + name;
  }
  const std::string request = method + "\n" + canonical_uri + "\n" + canonical_query(query) + "\n" +
                              canonical_headers + "\n" + signed_headers + "\n" + payload_sha256;
  const std::string date = amz_date.substr(0, 8);
  const std::string scope = date + "/" + region + "/" + service + "/aws4_request";
  const std::string to_sign =
      "AWS4-HMAC-SHA256\n" + amz_date + "\n" + scope + "\n" + sha256_hex(request);
  const std::string k_signing = hmac(
      hmac(hmac(hmac("AWS4" + credentials.secret_key, date), region), service), "aws4_request");
  const std::string sig = hmac(k_signing, to_sign);
  return "AWS4-HMAC-SHA256 Credential=" + credentials.access_key + "/" + scope +
         ", SignedHeaders=" + signed_headers +
         ", Signature=" + hex(reinterpret_cast<const unsigned char*>(sig.data()), sig.size());
}

// --- requests

namespace {

struct Response {
  long status = 0;
  std::string body;
  std::string etag;
};

std::size_t on_body(char* p, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(p, size * n);
  return size * n;
}

std::size_t on_header(char* p, std::size_t size, std::size_t n, void* out) {
  std::string line(p, size * n);
  std::string lower = line.substr(0, std::min<std::size_t>(line.size(), 5));
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  if (lower == "etag:") static_cast<Response*>(out)->etag = trim(line.substr(5));
  return size * n;
}

// The text of the first <tag>...</tag> in an XML body, entities decoded.
std::string xml_field(const std::string& xml, const std::string& tag, std::size_t* from = nullptr) {
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  const std::size_t a = xml.find(open, from ? *from : 0);
  if (a == std::string::npos) return {};
  const std::size_t b = xml.find(close, a);
  if (b == std::string::npos) return {};
  if (from) *from = b + close.size();
  std::string raw = xml.substr(a + open.size(), b - a - open.size()), out;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '&') {
      out += raw[i];
      continue;
    }
    const std::size_t semi = raw.find(';', i);
    const std::string ent = semi == std::string::npos ? "" : raw.substr(i + 1, semi - i - 1);
    if (ent == "amp")
      out += '&';
    else if (ent == "lt")
      out += '<';
    else if (ent == "gt")
      out += '>';
    else if (ent == "quot")
      out += '"';
    else if (ent == "apos")
      out += '\'';
    else if (!ent.empty() && ent[0] == '#') {
      const long code = ent.size() > 1 && ent[1] == 'x' ? std::strtol(ent.c_str() + 2, nullptr, 16)
                                                        : std::strtol(ent.c_str() + 1, nullptr, 10);
      out += static_cast<char>(code);  // keys we write are ASCII
    } else {
      out += '&';
      continue;
    }
    i = semi;
  }
  return out;
}

std::string amz_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

struct CurlGlobal {
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

bool retryable(CURLcode c) {
  switch (c) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

bool retryable(long status) {
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

// One request with retries. Returns the last response for any status that is
// not retried (the caller judges it); Error after the last attempt fails.
// `named`: the location messages name (a listing's prefix), else `at`.
Response send(const S3Settings& s, const std::string& method, const S3Location& at,
              const std::map<std::string, std::string>& query, std::string_view body,
              const S3Location* named = nullptr) {
  const std::string shown = (named ? *named : at).url();
  static CurlGlobal global;
  std::string host, canonical_uri, base;
  const std::string key_path = uri_encode(at.key, true);
  if (s.endpoint.empty()) {
    host = at.bucket + ".s3." + s.region + ".amazonaws.com";
    base = "https://" + host;
    canonical_uri = "/" + key_path;
  } else {
    host = s.endpoint.substr(s.endpoint.find("://") + 3);
    base = s.endpoint;
    canonical_uri = "/" + at.bucket + (at.key.empty() ? "" : "/" + key_path);
  }
  const std::string q = canonical_query(query);
  const std::string url = base + canonical_uri + (q.empty() ? "" : "?" + q);
  const std::string payload = sha256_hex(body);
  std::mt19937_64 jitter(std::random_device{}());
  std::string last_error;
  for (int attempt = 1;; ++attempt) {
    const std::string date = amz_now();
    std::map<std::string, std::string> headers = {
        {"host", host}, {"x-amz-content-sha256", payload}, {"x-amz-date", date}};
    if (!s.credentials.session_token.empty())
      headers["x-amz-security-token"] = s.credentials.session_token;
    const std::string auth = sigv4_authorization(method, canonical_uri, query, headers, payload,
                                                 date, s.region, "s3", s.credentials);
    CURL* curl = curl_easy_init();
    if (!curl) throw Error("s3: cannot start libcurl");
    curl_slist* list = nullptr;
    for (const auto& [name, value] : headers)
      list = curl_slist_append(list, (name + ": " + value).c_str());
    list = curl_slist_append(list, ("Authorization: " + auth).c_str());
    list = curl_slist_append(list, "Expect:");
    if (method == "PUT" || method == "POST")
      list = curl_slist_append(list, "Content-Type: application/octet-stream");
    Response r;
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r.body);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &r);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 20L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, s.timeout_s);
    if (method == "PUT" || method == "POST") {
      curl_easy_setopt(curl, CURLOPT_POST, 1L);
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.empty() ? "" : body.data());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    }
    if (method != "GET" && method != "POST")
      curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
    const CURLcode code = curl_easy_perform(curl);
    if (code == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
    curl_slist_free_all(list);
    curl_easy_cleanup(curl);
    if (code == CURLE_OK && !retryable(r.status)) return r;
    if (code != CURLE_OK && !retryable(code))
      throw Error("s3: " + method + " " + at.url() + ": " + curl_easy_strerror(code) + " (" + base +
                  ")");
    last_error = code != CURLE_OK
                     ? std::string(curl_easy_strerror(code))
                     : "HTTP " + std::to_string(r.status) +
                           (xml_field(r.body, "Code").empty() ? std::string()
                                                              : " " + xml_field(r.body, "Code"));
    if (attempt >= s.max_attempts)
      throw Error("s3: " + method + " " + shown + ": " + last_error + " after " +
                  std::to_string(attempt) + " attempts (" + base + ")");
    const double cap = std::min(s.backoff_cap_s, s.backoff_base_s * std::ldexp(1.0, attempt - 1));
    const double wait = std::uniform_real_distribution<double>(0, cap)(jitter);
    std::fprintf(stderr, "qmlsim: s3: %s %s: %s; retry %d of %d in %.2f s\n", method.c_str(),
                 shown.c_str(), last_error.c_str(), attempt, s.max_attempts - 1, wait);
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }
}

// Error for a response that is not a success, naming the URL and S3's code.
[[noreturn]] void fail(const std::string& method, const S3Location& at, const Response& r) {
  const std::string code = xml_field(r.body, "Code");
  std::string what;
  if (code == "NoSuchBucket")
    what = "no such bucket";
  else if (r.status == 403)
    what = "access denied (HTTP 403" + (code.empty() ? "" : " " + code) + ")";
  else
    what = "HTTP " + std::to_string(r.status) + (code.empty() ? "" : " " + code) +
           (xml_field(r.body, "Message").empty() ? "" : ": " + xml_field(r.body, "Message"));
  throw Error("s3: " + method + " " + (code == "NoSuchBucket" ? "s3://" + at.bucket : at.url()) +
              ": " + printable(what));
}

void expect_ok(const std::string& method, const S3Location& at, const Response& r) {
  if (r.status < 200 || r.status >= 300) fail(method, at, r);
}

}  // namespace

ObjectStore::ObjectStore(S3Settings settings) : settings_(std::move(settings)) {}

void ObjectStore::put(const S3Location& at, std::string_view bytes) const {
  if (bytes.size() < settings_.multipart_threshold) {
    expect_ok("PUT", at, send(settings_, "PUT", at, {}, bytes));
    return;
  }
  // Multipart: the object appears only when the upload is completed.
  const Response start = send(settings_, "POST", at, {{"uploads", ""}}, {});
  expect_ok("POST", at, start);
  const std::string id = xml_field(start.body, "UploadId");
  if (id.empty()) throw Error("s3: POST " + at.url() + ": no UploadId in the answer");
  std::string complete = "<CompleteMultipartUpload>";
  try {
    int part = 0;
    for (std::size_t off = 0; off < bytes.size(); off += settings_.part_size) {
      ++part;
      const std::string_view piece = bytes.substr(off, settings_.part_size);
      const Response r = send(settings_, "PUT", at,
                              {{"partNumber", std::to_string(part)}, {"uploadId", id}}, piece);
      expect_ok("PUT", at, r);
      complete += "<Part><PartNumber>" + std::to_string(part) + "</PartNumber><ETag>" + r.etag +
                  "</ETag></Part>";
    }
    complete += "</CompleteMultipartUpload>";
    const Response done = send(settings_, "POST", at, {{"uploadId", id}}, complete);
    expect_ok("POST", at, done);
    if (done.body.find("<Error>") != std::string::npos) fail("POST", at, done);
  } catch (...) {
    try {
      send(settings_, "DELETE", at, {{"uploadId", id}}, {});
    } catch (...) {  // the upload expires by the bucket's lifecycle; the first error matters
    }
    throw;
  }
}

void ObjectStore::put_file(const S3Location& at, const std::string& local) const {
  std::ifstream in(local, std::ios::binary);
  if (!in) throw Error(local + ": cannot read");
  std::ostringstream ss;
  ss << in.rdbuf();
  put(at, ss.str());
}

std::optional<std::string> ObjectStore::get(const S3Location& at) const {
  Response r = send(settings_, "GET", at, {}, {});
  if (r.status == 404 && xml_field(r.body, "Code") != "NoSuchBucket") return std::nullopt;
  expect_ok("GET", at, r);
  return std::move(r.body);
}

bool ObjectStore::get_to_file(const S3Location& at, const std::string& local) const {
  const std::optional<std::string> bytes = get(at);
  if (!bytes) return false;
  const fs::path parent = fs::path(local).parent_path();
  if (!parent.empty()) fs::create_directories(parent);
  std::ofstream out(local, std::ios::binary);
  out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  out.close();
  if (!out) throw Error(local + ": cannot write: " + last_system_error());
  return true;
}

std::vector<std::string> ObjectStore::list(const S3Location& prefix) const {
  std::vector<std::string> keys;
  std::string token;
  const S3Location bucket{prefix.bucket, ""};
  for (;;) {
    std::map<std::string, std::string> q = {{"list-type", "2"}, {"prefix", prefix.key}};
    if (!token.empty()) q["continuation-token"] = token;
    const Response r = send(settings_, "GET", bucket, q, {}, &prefix);
    expect_ok("GET", prefix, r);
    std::size_t from = 0;
    for (;;) {
      std::size_t contents = r.body.find("<Contents>", from);
      if (contents == std::string::npos) break;
      const std::string key = xml_field(r.body, "Key", &contents);
      from = contents;
      if (!key.empty()) keys.push_back(key);
    }
    if (xml_field(r.body, "IsTruncated") != "true") break;
    token = xml_field(r.body, "NextContinuationToken");
    if (token.empty()) break;
  }
  return keys;
}

void ObjectStore::remove(const S3Location& at) const {
  const Response r = send(settings_, "DELETE", at, {}, {});
  if (r.status == 404 && xml_field(r.body, "Code") != "NoSuchBucket") return;
  expect_ok("DELETE", at, r);
}

const ObjectStore& object_store() {
  static const ObjectStore store(s3_settings_from_environment());
  return store;
}

namespace {
// Objects fetched by this process, in a private folder removed at exit.
struct FetchCache {
  std::mutex mutex;
  std::string dir;
  std::map<std::string, std::string> local;
  int count = 0;
  ~FetchCache() {
    std::error_code ec;
    if (!dir.empty()) fs::remove_all(dir, ec);
  }
};
FetchCache& fetch_cache() {
  static FetchCache cache;
  return cache;
}
}  // namespace

namespace {
// A new path in the cache's folder (created on first use). REQUIRES the lock.
std::string new_local_path(FetchCache& cache, const std::string& name) {
  if (cache.dir.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "qmlsim-fetch-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw Error(tmpl + ": cannot create a temporary folder");
    cache.dir = tmpl;
  }
  return cache.dir + "/" + std::to_string(cache.count++) + "-" + (name.empty() ? "object" : name);
}
}  // namespace

std::string scratch_path(const std::string& name) {
  FetchCache& cache = fetch_cache();
  const std::lock_guard<std::mutex> lock(cache.mutex);
  return new_local_path(cache, name);
}

std::string fetch_to_local(const std::string& path, const std::string& where) {
  if (!is_s3_url(path)) return path;
  const S3Location at = parse_s3_url(path, where);
  FetchCache& cache = fetch_cache();
  const std::lock_guard<std::mutex> lock(cache.mutex);
  if (const auto it = cache.local.find(path); it != cache.local.end()) return it->second;
  const std::string local = new_local_path(cache, fs::path(at.key).filename().string());
  if (!object_store().get_to_file(at, local)) throw Error(where + ": " + path + ": no such object");
  cache.local[path] = local;
  return local;
}

}  // namespace qmlsim::io
