#!/usr/bin/env bash
# tools/doc_snippets.py, the doc tests' extractor: a body block and a program block that compile
# pass; a block with an error fails with the error at the Markdown file's own line; a
# ```cpp-fragment block is skipped.  usage: test_doc_snippets.sh CXX SOURCE_DIR
set -uo pipefail
cxx=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cat > "$work/good.md" <<'MD'
# good

```cpp
#include <vector>
std::vector<int> v{1, 2, 3};
v.push_back(4);
```

```cpp-fragment
this is not C++ and is not compiled
```

```cpp
#include <cstdio>
int main() { std::puts("ok"); return 0; }
```
MD
cat > "$work/bad.md" <<'MD'
# bad

text

```cpp
int x = 1;
int y = undefined_name + x;
```
MD
files=$(python3 "$src/tools/doc_snippets.py" "$work/good_out" "$work/good.md") || fail "extractor failed"
echo "$files"
[ "$(echo "$files" | wc -l)" -eq 2 ] || fail "expected one body file and one program"
grep -q "not C++" "$work"/good_out/* && fail "the cpp-fragment block was extracted"
for f in $files; do "$cxx" -std=c++17 -fsyntax-only "$f" || fail "good snippet $f does not compile"; done
bad=$(python3 "$src/tools/doc_snippets.py" "$work/bad_out" "$work/bad.md") || fail "extractor failed"
out=$("$cxx" -std=c++17 -fsyntax-only $bad 2>&1) && fail "a snippet with an error compiled"
echo "$out"
grep -q "bad.md:7:.*undefined_name" <<<"$out" || fail "the error is not reported at bad.md:7"
echo PASS
