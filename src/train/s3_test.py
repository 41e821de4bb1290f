#!/usr/bin/env python3
"""Runs in an S3 bucket, against a real S3-protocol server started here: moto's
standalone server on localhost, behind a proxy that injects faults (HTTP 500
and 503, dropped connections, latency, a bucket that denies access).

  s3_test.py QMLSIM EXAMPLES CASE    (CASE: kill_resume, mpi, inputs, errors, hostile_keys)

kill_resume: QCNN-8 trained to s3://, SIGKILLed after its first checkpoint,
  resumed from the bucket through the faulty proxy (multipart uploads on):
  weights and metrics identical to an uninterrupted local run; `qmlsim infer
  s3://...` prints what it prints for the local run; TensorBoard, reading the
  bucket with its own S3 support, finds the same scalars and histograms; the
  secret key appears in no output and no object.
mpi: the same job on 2 MPI ranks to s3://: the local run's weights.
inputs: a QAOA graph, a hybrid job's data table and circuit read from the
  bucket: the weights of the same jobs on local files; a malformed object's
  error names its URL and line.
errors: a missing bucket, denied access, a server that stays down, missing
  credentials, credentials in the endpoint URL: exit status 2 and one line
  naming the URL, never the secret.
hostile_keys: a run prefix holding keys with an absolute remainder ('//'),
  '.', '..', empty or backslash segments: exit status 2 and one line naming
  the key, and nothing written outside the run's local mirror.
"""
import http.client
import http.server
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import boto3
import h5py
import numpy as np

SECRET = "qmlsim-test-secret-5f2a9c"  # must never appear in any output or object
BUCKET = "runs"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, proc, what):
    """Until the server accepts connections (a start-up guard of 2 minutes,
    generous for a busy machine; ctest's TIMEOUT bounds the whole test)."""
    for _ in range(1200):
        if proc.poll() is not None:
            sys.exit(f"{what} exited with status {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"{what} did not start on port {port}")


class Faults:
    """What the proxy does to requests: a seeded share of 500/503 answers and
    dropped connections, a delay per request, a bucket that denies access."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rng = random.Random(1234)
        self.fail = 0.0
        self.drop = 0.0
        self.delay = 0.0
        self.injected = 0

    def pick(self):
        with self.lock:
            x = self.rng.random()
            if x < self.fail:
                self.injected += 1
                return "fail"
            if x < self.fail + self.drop:
                self.injected += 1
                return "drop"
            return "pass"


def start_proxy(upstream_port, faults):
    class Proxy(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def forward(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            time.sleep(faults.delay)
            if self.path.startswith("/denied"):
                return self.reply(403, b"<Error><Code>AccessDenied</Code>"
                                  b"<Message>Access Denied</Message></Error>")
            what = faults.pick()
            if what == "drop":  # no answer at all: the client sees the connection close
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if what == "fail":
                code = random.choice([500, 503])
                return self.reply(code, b"<Error><Code>SlowDown</Code></Error>")
            conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=60)
            headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
            conn.request(self.command, self.path, body=body, headers=headers)
            r = conn.getresponse()
            data = r.read()
            self.send_response(r.status)
            for k, v in r.getheaders():
                if k.lower() not in ("content-length", "connection", "transfer-encoding",
                                     "server", "date"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
            conn.close()

        def reply(self, code, body):
            self.send_response(code)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def handle_one_request(self):
            try:
                super().handle_one_request()
            except (BrokenPipeError, ConnectionResetError):  # a killed client
                self.close_connection = True

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Env:
    def __init__(self, examples, qmlsim):
        self.qmlsim = qmlsim
        self.examples = examples
        self.work = tempfile.mkdtemp(prefix="qmlsim_s3_")
        self.moto_port = free_port()
        env = dict(os.environ, S3_UPLOAD_PART_MIN_SIZE="1024")
        self.moto = subprocess.Popen([sys.executable, "-m", "moto.server", "-p",
                                      str(self.moto_port)], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.moto_port, self.moto, "moto server")
        self.faults = Faults()
        self.proxy = start_proxy(self.moto_port, self.faults)
        self.endpoint = f"http://127.0.0.1:{self.proxy.server_address[1]}"
        self.s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{self.moto_port}",
                               region_name="us-east-1", aws_access_key_id="AKIATEST",
                               aws_secret_access_key=SECRET)
        self.s3.create_bucket(Bucket=BUCKET)
        self.outputs = []  # every command's stdout and stderr, checked for the secret

    def close(self):
        self.proxy.shutdown()
        self.moto.terminate()
        self.moto.wait()
        shutil.rmtree(self.work, ignore_errors=True)

    def env(self, **extra):
        e = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        e.update(AWS_ACCESS_KEY_ID="AKIATEST", AWS_SECRET_ACCESS_KEY=SECRET,
                 AWS_REGION="us-east-1", AWS_ENDPOINT_URL_S3=self.endpoint,
                 QMLSIM_S3_MULTIPART_KIB="64", OMPI_ALLOW_RUN_AS_ROOT="1",
                 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        e.update(extra)
        return e

    def run(self, args, expect=0, env=None, prefix=()):
        r = subprocess.run(list(prefix) + [self.qmlsim] + args, capture_output=True, text=True,
                           env=env or self.env(), timeout=600)
        self.outputs.append(r.stdout + r.stderr)
        if r.returncode != expect:
            sys.exit(f"qmlsim {' '.join(args)}: status {r.returncode}, expected {expect}\n"
                     f"{r.stdout}\n{r.stderr}")
        return r

    def keys(self, prefix):
        out = []
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET,
                                                                       Prefix=prefix):
            out += [o["Key"] for o in page.get("Contents", [])]
        return out

    def download(self, prefix, to):
        for key in self.keys(prefix + "/"):
            path = os.path.join(to, key[len(prefix) + 1:])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            self.s3.download_file(BUCKET, key, path)
        return to


def qcnn_args(examples, epochs=10):
    return [f"{examples}/qcnn.toml", "--set", f"train.epochs={epochs}", "--quiet"]


def weights(path):
    with h5py.File(path, "r") as f:
        out = {}
        f.visititems(lambda name, d: out.__setitem__(name, np.array(d))
                     if isinstance(d, h5py.Dataset) else None)
        return out


def same_weights(a, b, what):
    wa, wb = weights(a), weights(b)
    assert wa.keys() == wb.keys(), (what, wa.keys(), wb.keys())
    for k in wa:
        assert np.array_equal(wa[k], wb[k]), f"{what}: {k} differs"


def tensorboard_tags(run_dir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    ea = EventAccumulator(run_dir, size_guidance={"scalars": 0, "histograms": 0})
    ea.Reload()
    tags = ea.Tags()
    return set(tags["scalars"]), set(tags["histograms"]), {
        t: [(e.step, e.value) for e in ea.Scalars(t)] for t in tags["scalars"]
        if not t.endswith("_s")}  # timings differ between runs


def case_kill_resume(e):
    local = os.path.join(e.work, "local")
    e.run(["train"] + qcnn_args(e.examples) + ["--run-dir", local])
    url = f"s3://{BUCKET}/qcnn"
    # A slow link, so the run is still going when it is killed.
    e.faults.delay = 0.05
    p = subprocess.Popen([e.qmlsim, "train"] + qcnn_args(e.examples) + ["--run-dir", url],
                         env=e.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while not any("checkpoints/ckpt-" in k for k in e.keys("qcnn/")):
        assert p.poll() is None, "the run ended before its first checkpoint"
        time.sleep(0.02)
    p.send_signal(signal.SIGKILL)
    out, err = p.communicate()
    e.outputs.append(out + err)
    assert "qcnn/result.json" not in e.keys("qcnn/"), "the run finished before the kill"
    print("killed after", [k for k in e.keys("qcnn/") if "ckpt-" in k])
    # Resume through a faulty link: failed and dropped requests are retried.
    e.faults.delay = 0.0
    e.faults.fail, e.faults.drop = 0.08, 0.04
    r = e.run(["train"] + qcnn_args(e.examples) + ["--run-dir", url, "--resume", "--trace"])
    e.faults.fail = e.faults.drop = 0.0
    assert e.faults.injected > 0, "no fault was injected"
    assert "retry" in r.stderr, r.stderr
    print(f"resumed with {e.faults.injected} injected faults")
    assert "qcnn/trace.json" in e.keys("qcnn/"), "no trace in the bucket"
    bucket_copy = e.download("qcnn", os.path.join(e.work, "from_bucket"))
    same_weights(os.path.join(local, "weights.h5"), os.path.join(bucket_copy, "weights.h5"),
                 "resumed run in the bucket against the uninterrupted local run")
    # The same records as the local run (timings aside), none duplicated by the resume.
    def records(path):
        import json
        rows = [json.loads(line) for line in open(os.path.join(path, "metrics.jsonl"))]
        return [{k: v for k, v in r.items() if not k.endswith("_s") and k != "examples_per_s"}
                for r in rows]
    assert records(local) == records(bucket_copy), "metrics.jsonl differs"
    # infer reads the run from the bucket.
    a = e.run(["infer", local]).stdout
    b = e.run(["infer", url]).stdout
    assert a == b, (a, b)
    # TensorBoard reads the bucket itself (its S3 support, S3_ENDPOINT): the same
    # tags and scalar values as from the local run's folder.
    os.environ.update(S3_ENDPOINT=f"http://127.0.0.1:{e.moto_port}", AWS_ACCESS_KEY_ID="AKIATEST",
                      AWS_SECRET_ACCESS_KEY=SECRET, AWS_REGION="us-east-1")
    sa, ha, va = tensorboard_tags(local)
    sb, hb, vb = tensorboard_tags(url)
    assert sa == sb and ha == hb, (sa ^ sb, ha ^ hb)
    for tag in va:
        assert np.allclose([v for _, v in va[tag]], [v for _, v in vb[tag]]), tag
        assert [s for s, _ in va[tag]] == [s for s, _ in vb[tag]], tag
    print(f"tensorboard: {len(sa)} scalar and {len(ha)} histogram tags agree")
    # The secret is in no object.
    for key in e.keys(""):
        body = e.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        assert SECRET.encode() not in body, key


def case_mpi(e):
    local = os.path.join(e.work, "local")
    e.run(["train"] + qcnn_args(e.examples, 4) + ["--run-dir", local])
    mpirun = ["mpirun", "--oversubscribe", "-np", "2", "-x", "AWS_ACCESS_KEY_ID", "-x",
              "AWS_SECRET_ACCESS_KEY", "-x", "AWS_REGION", "-x", "AWS_ENDPOINT_URL_S3"]
    e.run(["train"] + qcnn_args(e.examples, 4) + ["--run-dir", f"s3://{BUCKET}/mpi",
                                                   "--expect-ranks", "2"], prefix=mpirun)
    copy = e.download("mpi", os.path.join(e.work, "mpi"))
    same_weights(os.path.join(local, "weights.h5"), os.path.join(copy, "weights.h5"),
                 "2 ranks to the bucket against 1 rank locally")


def case_inputs(e):
    ex = e.examples
    e.s3.upload_file(f"{ex}/data/graphs/gnm_n18_m24_seed1967.edges", BUCKET, "data/g.edges")
    e.s3.upload_file(f"{ex}/data/wine.csv", BUCKET, "data/wine.csv")
    e.s3.upload_file(f"{ex}/hybrid/classifier.qasm", BUCKET, "data/classifier.qasm")
    e.s3.put_object(Bucket=BUCKET, Key="data/bad.edges", Body=b"0 7\n0 x\n")
    jobs = {"qaoa": (f"{ex}/qaoa_maxcut.toml", ["train.steps=2"],
                     {"data.graph": "data/g.edges"}),
            "wine": (f"{ex}/hybrid_wine.toml", ["train.epochs=1"],
                     {"data.path": "data/wine.csv", "model.circuit": "data/classifier.qasm"})}
    for name, (config, sets, objects) in jobs.items():
        def args(where, extra):
            out = ["train", config, "--quiet", "--run-dir", os.path.join(e.work, name + where)]
            for s in sets + extra:
                out += ["--set", s]
            return out
        e.run(args("-local", []))
        e.run(args("-s3", [f"{k}=s3://{BUCKET}/{v}" for k, v in objects.items()]))
        same_weights(os.path.join(e.work, name + "-local", "weights.h5"),
                     os.path.join(e.work, name + "-s3", "weights.h5"), f"{name} inputs from s3")
    r = e.run(["train", f"{ex}/qaoa_maxcut.toml", "--quiet", "--run-dir",
               os.path.join(e.work, "bad"), "--set", f"data.graph=s3://{BUCKET}/data/bad.edges"],
              expect=2)
    assert f"s3://{BUCKET}/data/bad.edges:2" in r.stderr, r.stderr


def case_errors(e):
    def one_line_error(r, *needles):
        lines = [line for line in r.stderr.splitlines() if "; retry " not in line]
        assert len(lines) == 1, r.stderr
        for n in needles:
            assert n in lines[0], (n, lines[0])

    args = ["train"] + qcnn_args(e.examples, 1)
    one_line_error(e.run(args + ["--run-dir", "s3://no-such-bucket/x"], expect=2),
                   "s3://no-such-bucket", "no such bucket")
    one_line_error(e.run(args + ["--run-dir", "s3://denied/x"], expect=2),
                   "s3://denied/", "access denied")
    down = e.env(AWS_ENDPOINT_URL_S3=f"http://127.0.0.1:{free_port()}",
                 QMLSIM_S3_MAX_ATTEMPTS="3")
    r = e.run(args + ["--run-dir", f"s3://{BUCKET}/down"], expect=2, env=down)
    one_line_error(r, f"s3://{BUCKET}/down", "after 3 attempts")
    assert r.stderr.count("retry") == 2, r.stderr  # the retry budget, not a time
    nocreds = {k: v for k, v in e.env().items() if not k.startswith("AWS_ACCESS")}
    nocreds.update(HOME=e.work, AWS_SECRET_ACCESS_KEY="")
    one_line_error(e.run(args + ["--run-dir", f"s3://{BUCKET}/x"], expect=2, env=nocreds),
                   "no credentials")
    one_line_error(e.run(["infer", f"s3://{BUCKET}/nothing-here"], expect=2),
                   f"s3://{BUCKET}/nothing-here/config.toml", "no such object")
    userinfo = e.env(AWS_ENDPOINT_URL_S3=e.endpoint.replace("http://", f"http://AKIATEST:{SECRET}@"))
    one_line_error(e.run(args + ["--run-dir", f"s3://{BUCKET}/x"], expect=2, env=userinfo),
                   "AWS_ENDPOINT_URL_S3", "user name or password")


def case_hostile_keys(e):
    outside = os.path.join(e.work, "outside")
    os.makedirs(outside)
    args = ["train"] + qcnn_args(e.examples, 1)
    bad = {"abs": f"/{outside.lstrip('/')}/planted", "dot": "checkpoints/./x",
           "dotdot": "checkpoints/../../x", "empty": "checkpoints//x", "backslash": "a\\b"}
    for name, rest in bad.items():
        key = f"hostile/{name}/{rest}"
        e.s3.put_object(Bucket=BUCKET, Key=key, Body=b"planted")
        assert key in e.keys(f"hostile/{name}/"), (key, e.keys(f"hostile/{name}/"))
        r = e.run(args + ["--run-dir", f"s3://{BUCKET}/hostile/{name}"], expect=2)
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and "object key" in lines[0] and "not a file inside the run" in \
            lines[0], r.stderr
        assert not os.listdir(outside), os.listdir(outside)
    # A folder marker and ordinary keys are mirrored as before.
    e.s3.put_object(Bucket=BUCKET, Key="hostile/fine/", Body=b"")
    e.s3.put_object(Bucket=BUCKET, Key="hostile/fine/notes/", Body=b"")
    e.run(args + ["--run-dir", f"s3://{BUCKET}/hostile/fine"])
    assert f"hostile/fine/weights.h5" in e.keys("hostile/fine/")


def main():
    qmlsim, examples, case = sys.argv[1:4]
    e = Env(examples, qmlsim)
    try:
        {"kill_resume": case_kill_resume, "mpi": case_mpi, "inputs": case_inputs,
         "errors": case_errors, "hostile_keys": case_hostile_keys}[case](e)
        for text in e.outputs:
            assert SECRET not in text, "the secret key was printed"
    finally:
        e.close()
    print(f"s3 {case}: passed")


if __name__ == "__main__":
    main()
