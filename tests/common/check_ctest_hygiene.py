#!/usr/bin/env python3
"""check_ctest_hygiene.py CTEST BUILD_DIR: fails, naming the entries, when a ctest entry of the
build has no TIMEOUT or uses PASS_REGULAR_EXPRESSION / FAIL_REGULAR_EXPRESSION without checking
the exit code (ctest ignores the exit code once a pass expression is set)."""
import json
import subprocess
import sys

ctest, build = sys.argv[1], sys.argv[2]
out = subprocess.run([ctest, "--show-only=json-v1", "--test-dir", build], check=True,
                     capture_output=True, text=True).stdout
tests = json.loads(out)["tests"]
bad = []
for t in tests:
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    if "TIMEOUT" not in props:
        bad.append(f"{t['name']}: no TIMEOUT")
    if "PASS_REGULAR_EXPRESSION" in props:
        bad.append(f"{t['name']}: PASS_REGULAR_EXPRESSION ignores the exit code "
                   "(wrap the command in tests/common/expect_output.sh)")
for b in bad:
    print("ctest hygiene:", b)
print(f"{len(tests)} ctest entries checked, {len(bad)} problem(s)")
sys.exit(1 if bad else 0)
