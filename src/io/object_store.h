// Objects in an S3-compatible bucket (AWS S3, Google Cloud Storage through its
// S3 interoperability endpoint, MinIO, Ceph RGW), for runs, data sets and
// weights named by s3://bucket/key URLs.
//
// Requests go over libcurl (HTTPS with certificate verification unless the
// endpoint says http://) and are signed with AWS Signature Version 4 by
// sigv4_authorization below (OpenSSL's SHA-256 and HMAC). Settings come from
// the variables and files AWS's own tools read (see s3_settings_from_environment).
// A PUT is atomic: an object is visible only once complete, large files by a
// multipart upload that is completed last. Transient failures (connection
// errors, HTTP 5xx and 429) are retried with exponential backoff and full
// jitter, one line on stderr per retry. Every other failure is an Error with
// one line naming the URL, never a credential.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace qmlsim::io {

// Whether `path` names an object ("s3://...").
bool is_s3_url(std::string_view path);

struct S3Location {
  std::string bucket;
  std::string key;  // no leading '/'; may be empty (the bucket) or end in '/' (a prefix)
  std::string url() const { return "s3://" + bucket + (key.empty() ? "" : "/" + key); }
};

// Error ("<where>: <url>: ...") unless `url` is s3://BUCKET[/KEY] with a valid
// bucket name (3-63 characters of a-z, 0-9, '.', '-', starting and ending
// with a letter or digit).
S3Location parse_s3_url(const std::string& url, const std::string& where);

// A path a flag may give: a local path or a valid s3:// URL, else the Error
// of require_file_path or parse_s3_url naming `where`.
void require_path_or_s3_url(const std::string& path, const std::string& where);

struct S3Credentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;  // temporary credentials only
};

struct S3Settings {
  S3Credentials credentials;
  std::string region = "us-east-1";
  // scheme://host[:port] of a custom endpoint; empty: AWS
  // (https://BUCKET.s3.REGION.amazonaws.com, virtual-hosted).
  std::string endpoint;
  bool path_style = false;  // endpoint/BUCKET/KEY (custom endpoints)
  int max_attempts = 6;     // per request, the first included
  double backoff_base_s = 0.2;
  double backoff_cap_s = 10;
  long timeout_s = 300;  // per attempt
  std::size_t multipart_threshold = std::size_t{64} << 20;
  std::size_t part_size = std::size_t{16} << 20;  // >= 5 MiB (S3's least part but the last)
};

// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, else the
// shared credentials file (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials,
// section AWS_PROFILE or "default"); AWS_REGION or AWS_DEFAULT_REGION;
// AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (path-style addressing);
// QMLSIM_S3_MAX_ATTEMPTS, and QMLSIM_S3_MULTIPART_KIB (the multipart threshold
// and part size; S3 takes parts of at least 5 MiB but the last) for tests and tuning.
// Error when no credentials are found or a value is malformed.
S3Settings s3_settings_from_environment();

// AWS Signature Version 4 of one request: the Authorization header's value.
// `canonical_uri` is already URI-encoded; `query` holds decoded names and
// values (encoded and sorted here); `headers` lower-case names (all signed)
// with their values; `payload_sha256` lower-case hex; `amz_date` as
// YYYYMMDDTHHMMSSZ. Pure: tested against botocore's signatures.
std::string sigv4_authorization(const std::string& method, const std::string& canonical_uri,
                                const std::map<std::string, std::string>& query,
                                const std::map<std::string, std::string>& headers,
                                const std::string& payload_sha256, const std::string& amz_date,
                                const std::string& region, const std::string& service,
                                const S3Credentials& credentials);

// Lower-case hex SHA-256 of `data`.
std::string sha256_hex(std::string_view data);

// RFC 3986 encoding as SigV4 wants it (unreserved characters kept; '/' kept
// when `keep_slash`).
std::string uri_encode(std::string_view s, bool keep_slash);

class ObjectStore {
 public:
  explicit ObjectStore(S3Settings settings);

  void put(const S3Location& at, std::string_view bytes) const;
  // A local file; a multipart upload from settings().multipart_threshold.
  void put_file(const S3Location& at, const std::string& local) const;
  // The object's bytes; nullopt when there is no such key.
  std::optional<std::string> get(const S3Location& at) const;
  // The object written to the local file `local` (its folder created); false,
  // with nothing written, when there is no such key. Error naming `local` if
  // it cannot be written.
  bool get_to_file(const S3Location& at, const std::string& local) const;
  // Keys (whole, not relative) of every object whose key starts with
  // `prefix.key`, in S3's (lexicographic) order.
  std::vector<std::string> list(const S3Location& prefix) const;
  // Deletes the object (no error when it is absent).
  void remove(const S3Location& at) const;

  const S3Settings& settings() const { return settings_; }

 private:
  S3Settings settings_;
};

// The process's store, its settings read from the environment on first use.
const ObjectStore& object_store();

// A local path with the contents of `path`: `path` itself unless it is an
// s3:// URL, whose object is downloaded once per process into a private
// temporary folder (removed at exit). Error naming `where` when the object
// does not exist.
std::string fetch_to_local(const std::string& path, const std::string& where);

// A fresh path in the same private folder, for a file to be sent to a bucket
// once written.
std::string scratch_path(const std::string& name);

// read(local) on a local copy of `path` (fetch_to_local); an Error's message
// names `path`, not the copy.
template <class Read>
auto read_via_local(const std::string& path, const std::string& where, Read&& read) {
  const std::string local = fetch_to_local(path, where);
  if (local == path) return read(path);
  try {
    return read(local);
  } catch (const Error& e) {
    std::string m = e.what();
    for (std::size_t at = m.find(local); at != std::string::npos; at = m.find(local, at))
      m.replace(at, local.size(), path);
    throw Error(m);
  }
}

}  // namespace qmlsim::io
