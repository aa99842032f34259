"""check_selectors.py STAND_IN_AST REAL_AST: every Objective-C method bridge.m
calls (the selectors of the message expressions in the stand-in's AST dump,
clang -Xclang -ast-dump) is declared in the stand-in SDK (tests/metal/sdk)
exactly as in Apple's real headers: the same kind (class or instance), the
same return and parameter types after typedefs (canonical types), and no
nullability that contradicts Apple's (where both dumps show one: a property's
getter shows none). Both dumps are made for arm64 macOS 13 over the SDK's C
headers, so that BOOL, uint64_t and NSUInteger mean what they mean there. The stand-in is what type-checks bridge.m where the real
SDK is not at hand; a declaration that drifts from Apple's would let a wrong
call pass there. Prints a line per selector; exits 1 on any difference."""
import re
import sys
from collections import defaultdict

TYPE = re.compile(r"'([^']*)'(?::'([^']*)')?")
NULLABILITY = re.compile(r"_Nonnull|_Nullable|_Null_unspecified")


def node(line):
    """(depth, text) of an AST dump line: the depth is where the node's name starts."""
    m = re.match(r"[| `-]*", line)
    return m.end(), line[m.end():]


def signature(text):
    """A declaration's type as (canonical, nullability), from the last quoted type on its line."""
    types = TYPE.findall(text)
    if not types:
        return ("?", "")
    sugared, canonical = types[-1]
    canonical = (canonical or sugared).replace("__strong", "").replace(" ", "")
    return (canonical, ",".join(NULLABILITY.findall(sugared)))


def same(a, b):
    """Whether two method signatures ((return, params)) agree: canonical types equal, and
    nullability equal wherever both sides show one."""
    (ra, pa), (rb, pb) = a, b
    if len(pa) != len(pb):
        return False
    return all(x[0] == y[0] and (not x[1] or not y[1] or x[1] == y[1]) for x, y in zip((ra,) + pa, (rb,) + pb))


def methods(path):
    """{(kind, selector): {signature}} of every ObjCMethodDecl, and the selectors messages send."""
    decls, sent = defaultdict(set), set()
    current, depth, params = None, 0, []

    def close():
        if current:
            decls[current[0]].add((current[1], tuple(params)))

    with open(path, errors="replace") as f:
        for line in f:
            d, text = node(line.rstrip("\n"))
            if current and d <= depth:
                close()
                current = None
            if text.startswith("ObjCMethodDecl"):
                m = re.search(r" ([-+]) ([A-Za-z_:][A-Za-z0-9_:]*) '", text)
                if m:
                    current, depth, params = ((m.group(1), m.group(2)), signature(text)), d, []
            elif current and d == depth + 2 and text.startswith("ParmVarDecl"):
                params.append(signature(text))
            elif text.startswith("ObjCMessageExpr"):
                m = re.search(r"selector=(\S+)", text)
                if m:
                    sent.add(m.group(1))
    close()
    return decls, sent


def main():
    stand, sent = methods(sys.argv[1])
    real, _ = methods(sys.argv[2])
    failed = 0
    for sel in sorted(sent):
        for kind in "-+":
            mine = stand.get((kind, sel), set())
            if not mine:
                continue
            theirs = real.get((kind, sel), set())
            missing = {sig for sig in mine if not any(same(sig, other) for other in theirs)}
            if missing:
                failed += 1
                for sig in sorted(missing):
                    print(f"FAIL {kind}{sel}: the stand-in declares {sig}; Apple's headers: "
                          f"{sorted(theirs) or 'no such method'}")
    if not sent:
        print("FAIL no message expression found in the stand-in's AST dump")
        failed += 1
    print(f"{'ok  ' if not failed else 'FAIL'} {len(sent)} selectors bridge.m sends: "
          f"{len(sent) - failed} declared in the stand-in as in Apple's headers")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
