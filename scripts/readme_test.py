#!/usr/bin/env python3
"""Runs the README's command blocks as a new user types them.

Every fenced ```sh or ```python block of README.md must be preceded by a marker:
  <!-- readme-test: runs ... -->      run here; the block must exit 0
  <!-- readme-test: not run (why) --> shown only, with the reason
A sh block runs with bash -e in a scratch folder that links every top-level
entry of the repository (so the commands' relative paths work and their run
directories are new each time); a python block runs with
build/python-venv/bin/python (made by scripts/python_test.sh), in the same
folder. A block without a marker, or with a marker no block follows, fails.

  python3 scripts/readme_test.py [README.md]
Ends with 'readme: N passed, N failed' and exits non-zero on any failure.
"""
import os
import re
import subprocess
import sys
import tempfile

MARKER = re.compile(r"<!--\s*readme-test:\s*(runs|not run)\b(.*?)-->")
FENCE = re.compile(r"^```(\w+)\s*$")


def blocks(path):
    """(blocks, dangling): (line, language, marker kind or None, marker note, code)
    for every fenced block, and the lines of markers that no block follows."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out, dangling, marker, i = [], [], None, 0
    while i < len(lines):
        m = MARKER.search(lines[i])
        if m:
            if marker:
                dangling.append(marker[0])
            marker = (i + 1, m.group(1), m.group(2).strip())
            i += 1
            continue
        f = FENCE.match(lines[i])
        if f:
            start = i + 1
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            kind = note = None
            if marker and marker[0] >= start - 2:  # the marker is right above the fence
                kind, note = marker[1], marker[2]
            out.append((start, f.group(1), kind, note, "\n".join(lines[i + 1:j])))
            marker = None
            i = j + 1
            continue
        if lines[i].strip() and marker and not lines[i].lstrip().startswith("<!--"):
            dangling.append(marker[0])  # text between a marker and its block
            marker = None
        i += 1
    if marker:
        dangling.append(marker[0])
    return out, dangling


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    readme = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "README.md")
    passed = failed = 0
    env = dict(os.environ)
    if os.geteuid() == 0:  # Open MPI refuses root unless told
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    with tempfile.TemporaryDirectory(prefix="qmlsim_readme_") as scratch:
        for entry in os.listdir(root):
            if entry not in ("runs", ".git"):
                os.symlink(os.path.join(root, entry), os.path.join(scratch, entry))
        found, dangling = blocks(readme)
        for line in dangling:
            print(f"FAIL {os.path.basename(readme)}:{line}: a readme-test marker with no block after it")
            failed += 1
        for line, lang, kind, note, code in found:
            where = f"{os.path.basename(readme)}:{line}"
            if lang not in ("sh", "python"):
                continue
            if kind is None:
                print(f"FAIL {where}: a {lang} block without a '<!-- readme-test: ... -->' marker")
                failed += 1
                continue
            if kind == "not run":
                if not note:
                    print(f"FAIL {where}: 'not run' needs its reason")
                    failed += 1
                else:
                    print(f"not run {where}: {note}")
                continue
            if lang == "sh":
                cmd = ["bash", "-e", "-c", code]
            else:
                python = os.path.join(root, "build", "python-venv", "bin", "python")
                if not os.path.exists(python):
                    print(f"FAIL {where}: {python} is missing (run scripts/python_test.sh first)")
                    failed += 1
                    continue
                cmd = [python, "-c", code]
            print(f"== {where} ({lang})", flush=True)
            r = subprocess.run(cmd, cwd=scratch, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=900)
            tail = "\n".join(r.stdout.rstrip().split("\n")[-6:])
            if r.returncode == 0:
                passed += 1
                print(tail)
            else:
                failed += 1
                print(f"FAIL {where}: exit {r.returncode}\n{r.stdout}")
    print(f"readme: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
