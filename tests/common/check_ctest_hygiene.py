#!/usr/bin/env python3
"""check_ctest_hygiene.py CTEST BUILD_DIR KINDS ALONE: fails, naming the entries, when a ctest entry of
the build has no TIMEOUT, uses PASS_REGULAR_EXPRESSION / FAIL_REGULAR_EXPRESSION without checking
the exit code (ctest ignores the exit code once a pass expression is set), or has not exactly one
kind label of KINDS (comma separated; tests/CMakeLists.txt's COHORT_TEST_KINDS, where they are
defined) with `slow` and the topic labels in TOPICS (`elastic`: the issue's own label for its tests)
as the only others allowed, or is of a kind in ALONE (comma separated: entries with several
processes or bounded waits, which ctest must not run beside another) without PROCESSORS >= 2."""
import json
import subprocess
import sys

TOPICS = ("elastic",)
ctest, build, kinds = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
alone = sys.argv[4].split(",") if len(sys.argv) > 4 else []
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
    labels = props.get("LABELS", [])
    own = [label for label in labels if label in kinds]
    other = [label for label in labels if label not in kinds and label != "slow" and label not in TOPICS]
    if len(own) != 1:
        bad.append(f"{t['name']}: {len(own)} kind labels {own} (want one of {', '.join(kinds)}; "
                   "cohort_test_labels() in tests/CMakeLists.txt)")
    if own and own[0] in alone and int(props.get("PROCESSORS", 1)) < 2:
        bad.append(f"{t['name']}: kind {own[0]} runs alone (PROCESSORS 2 or more; "
                   "tests/CMakeLists.txt, COHORT_TEST_KINDS_ALONE)")
    if other:
        bad.append(f"{t['name']}: labels {other} are neither a kind, slow nor a topic {TOPICS}")
for b in bad:
    print("ctest hygiene:", b)
print(f"{len(tests)} ctest entries checked, {len(bad)} problem(s)")
sys.exit(1 if bad else 0)
