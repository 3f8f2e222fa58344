"""Writes trainpy_flags.json: every flag of torchvision's references/classification/train.py
(its get_args_parser()), with its option strings, default and kind, for tests/examples/
test_classify.sh, which checks that classify takes each one by the same names with the same
default, or refuses it by name.

train.py is not in the torchvision wheel: fetch the pytorch/vision repository and point
VISION_REFS at its references/classification folder (train.py imports its siblings: presets,
transforms, utils, sampler). Run with the peers venv's python (it imports torch and torchvision):

    VISION_REFS=/work/vision-refs/references/classification \
        .venv-peers/bin/python tests/golden/make_trainpy_flags.py > tests/golden/trainpy_flags.json
"""
import argparse
import json
import os
import sys

refs = os.environ.get("VISION_REFS", "/work/vision-refs/references/classification")
sys.path.insert(0, refs)
import train  # noqa: E402  (train.py of the fetched repository)

parser = train.get_args_parser(add_help=False)
flags = []
for action in parser._actions:
    if isinstance(action, argparse._HelpAction):
        continue
    kind = "flag" if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)) \
        else "option"
    flags.append({
        "options": list(action.option_strings),
        "kind": kind,
        "default": action.default,
        "type": getattr(action.type, "__name__", None) if action.type else None,
    })
json.dump({"source": os.path.abspath(os.path.join(refs, "train.py")),
           "commit": os.environ.get("VISION_COMMIT", ""),
           "flags": flags}, sys.stdout, indent=1, default=str)
print()
