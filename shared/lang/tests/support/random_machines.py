"""Random, mostly well-formed machines as one-line snippets, for a fuzz run of the
snippet parity tests (validation especially): `python3 random_machines.py SEED COUNT OUT`,
then `HAREL_SNIPPETS=OUT cargo test -p harel-lang --test validate_parity snippets`."""
import random
import sys

rng = random.Random(int(sys.argv[1]))
TYPES = ["int", "float", "string", "bool", "any"]
EVENTS = ["Go", "Stop", "Tick", "Pay"]
RESERVED = ["Timeout", "Cancel", "Expired", "Finished"]
FIELDS = ["n", "s", "f", "b", "x"]
LITS = ["1", "2.5", '"a"', "true", "[1, 2]", "-3", "0"]


def lit():
    return rng.choice(LITS)


def leaf():
    left = rng.choice(FIELDS + ["event." + rng.choice(FIELDS), "context." + rng.choice(FIELDS)])
    op = rng.choice(["==", "!=", "<", "<=", ">", ">=", "in"])
    right = lit() if rng.random() < 0.7 else rng.choice(["event.", "context."]) + rng.choice(FIELDS)
    return f"{left} {op} {right}"


def pred(depth=0):
    r = rng.random()
    if depth > 1 or r < 0.5:
        return leaf() if rng.random() < 0.9 else rng.choice(["g1", "g2"])
    if r < 0.7:
        return f"{pred(depth + 1)} and {pred(depth + 1)}"
    if r < 0.85:
        return f"{pred(depth + 1)} or {pred(depth + 1)}"
    return f"not ({pred(depth + 1)})"


def expr():
    side = lambda: lit() if rng.random() < 0.5 else rng.choice(["event.", "context."]) + rng.choice(FIELDS)  # noqa: E731
    return side() if rng.random() < 0.5 else f"{side()} {rng.choice('+-*/')} {side()}"


def assigns():
    return "set " + ", ".join(f"context.{rng.choice(FIELDS)} = {expr()}" for _ in range(rng.randint(1, 2)))


def trigger(allow_none=True):
    if allow_none and rng.random() < 0.25:
        return ""
    kinds = " | ".join(rng.sample(EVENTS + RESERVED + ["Typo"], rng.randint(1, 2)))
    t = f" on {kinds}"
    if rng.random() < 0.4:
        t += f" where {pred()}"
    return t


def transition(names):
    src, dst = rng.choice(names), rng.choice(names + ["Nowhere"] if rng.random() < 0.05 else names)
    r = rng.random()
    if r < 0.6:
        t = f"from {src} to {dst}{trigger()}"
        if rng.random() < 0.3:
            t += " " + assigns()
        return t
    if r < 0.8:
        branches = " ".join(f"when {pred()} to {rng.choice(names)}" + (f" {assigns()}" if rng.random() < 0.2 else "") for _ in range(rng.randint(1, 2)))
        els = f" else to {rng.choice(names)}" if rng.random() < 0.6 else ""
        return f"from {src} choose{trigger()} {{ {branches}{els} }}"
    vals = rng.sample(['"a"', '"b"', "1", "true"], rng.randint(1, 3))
    enum = f" returns {{ {', '.join(rng.sample(vals + ['2'], rng.randint(1, len(vals))))} }}" if rng.random() < 0.4 else ""
    branches = " ".join(f"{v} to {rng.choice(names)}" for v in vals)
    els = f" else to {rng.choice(names)}" if rng.random() < 0.4 else ""
    return f"from {src} select pick{enum}{trigger()} {{ {branches}{els} }}"


def body(depth, prefix):
    n = rng.randint(1, 4)
    names = [f"{prefix}{i}" for i in range(n)]
    items = []
    if rng.random() < 0.9:
        items.append(f"initial {rng.choice(names) if rng.random() < 0.95 else 'Nope'}")
    for name in names:
        r = rng.random()
        hooks = ""
        if rng.random() < 0.2:
            hooks += f" on enter act(k: {lit()})"
        if rng.random() < 0.15:
            hooks += " timeout " + rng.choice(["5", "0", "context t"])
        if rng.random() < 0.1:
            hooks += " on activity act"
        if depth < 2 and r < 0.2:
            items.append(f"state {name} {{{hooks} {body(depth + 1, name + '_')} }}")
        elif depth < 2 and r < 0.3:
            regions = " ".join(f"state {name}R{j} {{ {body(depth + 2, name + 'R' + str(j) + '_')} }}" for j in range(2))
            items.append(f"orthogonal {name} {{ {'cancel_on_failure ' if rng.random() < 0.3 else ''}{regions} }}")
        elif r < 0.55:
            items.append(f"final {name} {rng.choice(['success', 'failed'])}" + (f" {{{hooks} }}" if hooks else ""))
        else:
            extra = " outcome odd" if rng.random() < 0.05 else ""
            items.append(f"state {name} {{{hooks}{extra} }}")
    for _ in range(rng.randint(0, n + 1)):
        items.append(transition(names))
    return " ".join(items)


out = []
for _ in range(int(sys.argv[2])):
    decls = []
    for e in EVENTS:
        if rng.random() < 0.8:
            fields = " ".join(f"{f}: {rng.choice(TYPES)}{'?' if rng.random() < 0.3 else ''}" for f in rng.sample(FIELDS, rng.randint(0, 3)))
            decls.append(f"event {e} {{ {fields} }}")
    decls.append(f"guard g1 = {leaf()}")
    decls.append(f"guard g2 = {pred()}")
    decls.append("bind { act = pkg.act  pick = pkg.pick }")
    head = ""
    if rng.random() < 0.3:
        head += f" ttl {rng.choice(['60', '0'])}"
    if rng.random() < 0.5:
        ctx = " ".join(
            f"{f}: {rng.choice(TYPES)}" + (f" = {lit()}" if rng.random() < 0.5 else ("?" if rng.random() < 0.3 else ""))
            for f in rng.sample(FIELDS, rng.randint(1, 4))
        )
        head += f" context {{ {ctx} }}"
    decls.append(f"machine M {{{head} {body(0, 'S')} }}")
    out.append(" ".join(decls))
open(sys.argv[3], "w").write("\n".join(out) + "\n")
