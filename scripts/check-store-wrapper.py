#!/usr/bin/env python3
"""Checks that include/evident/store_wrapper.h forwards every virtual call of store.h's
Transaction, Snapshot and Store (ctest store_wrapper_complete): a call added to store.h and not
to its forwarding base would reach a wrapper's default instead of the wrapped backend (a fault
store around PostgreSQL would then lose a lock or a claim). Exit 0 when complete, 1 otherwise,
naming each call missing.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def class_body(text, name):
    match = re.search(r"^class %s\b[^{]*\{\n" % name, text, re.M)
    if match is None:
        sys.exit("check-store-wrapper: no class %s" % name)
    at, depth = match.end(), 1
    end = at
    while depth:
        depth += {"{": 1, "}": -1}.get(text[end], 0)
        end += 1
    return text[at:end - 1]


def calls(body, marker):
    """Names of the methods declared with `marker` ('virtual' before, or 'override' after)."""
    names = set()
    for decl in re.split(r"[;{}]", body):
        decl = " ".join(decl.split())
        match = re.search(r"\b(\w+)\([^()]*(?:\([^()]*\)[^()]*)*\)\s*(const\s*)?(override)?", decl)
        if match is None or match.group(1).startswith("~"):
            continue
        if marker == "virtual" and decl.startswith("virtual "):
            names.add(match.group(1))
        if marker == "override" and match.group(3):
            names.add(match.group(1))
    return names


def bases(text, name):
    match = re.search(r"^class %s\s*:([^{]*)\{" % name, text, re.M)
    if match is None:
        return []
    return re.findall(r"public\s+(\w+)", match.group(1))


def virtual_calls(text, name):
    """The virtual calls of class `name` and of the bases it derives from, recursively."""
    names = calls(class_body(text, name), "virtual") - {name}
    for base in bases(text, name):
        names |= virtual_calls(text, base)
    return names


def main():
    strip = lambda text: re.sub(r"//[^\n]*", "", text)
    # store.h composes the concern headers (store_decisions.h, store_outbox.h, ...).
    store = "\n".join(strip(path.read_text())
                      for path in sorted((ROOT / "include/evident").glob("store*.h"))
                      if path.name != "store_wrapper.h")
    wrapper = strip((ROOT / "include/evident/store_wrapper.h").read_text())
    missing = []
    for base, wrap in (("Transaction", "TransactionWrapper"), ("Snapshot", "SnapshotWrapper"),
                       ("Store", "StoreWrapper")):
        declared = virtual_calls(store, base)
        forwarded = calls(class_body(wrapper, wrap), "override")
        missing += ["%s::%s" % (base, name) for name in sorted(declared - forwarded)]
        if not declared:
            sys.exit("check-store-wrapper: found no virtual call in %s" % base)
    if missing:
        print("store_wrapper.h does not forward: " + ", ".join(missing))
        return 1
    print("store_wrapper.h forwards every virtual call of store.h")
    return 0


if __name__ == "__main__":
    sys.exit(main())
