#!/usr/bin/env python3
"""The build targets behind a ctest selection: reads `ctest -N --show-only=json-v1` on stdin (the
selected entries' names) and prints, one per line, every program of BUILD_DIR/bin that a selected
entry's command names: the test program itself, or an argument (cohortrun's entries pass theirs).
The commands come from BUILD_DIR's CTestTestfile.cmake files, since ctest leaves out the command of
an entry whose program is not built yet. A target's output is named after it in this project
(bin/<target>), so the names are the targets to build. An entry whose script is given the whole
bin directory uses programs it does not name here; if those are not among the names, the entry
fails loudly (program not found), never silently.

    ctest --preset asan -N -L unit --show-only=json-v1 | tools/test_programs.py build-asan
"""
import json
import os
import re
import sys

ADD_TEST = re.compile(r'^add_test\(\[=\[(?P<name>.*?)\]=\] (?P<args>.*)\)\s*$')
QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


def commands(build_dir):
    """Every entry's command in build_dir, by name."""
    out = {}
    for root, _, files in os.walk(build_dir):
        if "CTestTestfile.cmake" not in files:
            continue
        with open(os.path.join(root, "CTestTestfile.cmake"), encoding="utf-8") as f:
            for line in f:
                m = ADD_TEST.match(line)
                if m:
                    out[m.group("name")] = QUOTED.findall(m.group("args"))
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: test_programs.py BUILD_DIR < ctest -N --show-only=json-v1 output")
    build_dir = os.path.realpath(sys.argv[1])
    bin_dir = os.path.join(build_dir, "bin")
    try:
        selected = [t["name"] for t in json.load(sys.stdin).get("tests", [])]
    except (json.JSONDecodeError, KeyError) as e:
        sys.exit(f"test_programs.py: stdin is not ctest's JSON: {e}")
    known = commands(build_dir)
    missing = [n for n in selected if n not in known]
    if missing:
        sys.exit(f"test_programs.py: no command in {build_dir} for: {', '.join(missing)}")
    names = set()
    for n in selected:
        for arg in known[n]:
            if os.path.isabs(arg) and os.path.dirname(os.path.realpath(arg)) == bin_dir:
                names.add(os.path.basename(arg))
    if not names:
        sys.exit(f"test_programs.py: no selected entry's command names a program in {bin_dir}")
    print("\n".join(sorted(names)))


if __name__ == "__main__":
    main()
