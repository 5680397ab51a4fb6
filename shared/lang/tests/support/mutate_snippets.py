"""Mutated one-line variants of the corpus machines, for a fuzz run of the snippet parity
test: `python3 mutate_snippets.py SEED PER_FILE OUT`, then
`HAREL_SNIPPETS=OUT cargo test -p harel-lang --test parity snippets`."""
import glob
import random
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
random.seed(int(sys.argv[1]))
files = sorted(
    glob.glob(str(ROOT / 'shared/lang/tests/corpus/*.stm'))
    + glob.glob(str(ROOT / 'shared/lang/tests/validate/*.stm'))
    + glob.glob(str(ROOT / 'examples/*.stm'))
)
KW = ["state","from","to","on","where","and","or","not","set","select","choose","when","else","final","initial","{","}","(",")",",","|","==","<=","in","[","]","\"x\"","1","1.5","true","context.x","event.y","join","all","returns","timeout","carry","defer","no","history",":","=","?","int","guard","event","machine","bind","orthogonal","cancel_on_failure","ttl","context","outcome","enter","exit","activity","a.b"]
out=[]
for f in files:
    text=open(f).read()
    # strip comments to keep one-liners simple
    text='\n'.join(l.split('#')[0] for l in text.splitlines())
    toks=re.findall(r'"(?:\\.|[^"\\])*"|[A-Za-z_][A-Za-z0-9_.]*|\d+(?:\.\d+)?|==|!=|<=|>=|\S', text)
    for _ in range(int(sys.argv[2])):
        t=list(toks)
        for _ in range(random.randint(1,2)):
            i=random.randrange(len(t))
            op=random.random()
            if op<0.3: del t[i]
            elif op<0.5: t.insert(i, t[i])
            elif op<0.7 and i+1<len(t): t[i],t[i+1]=t[i+1],t[i]
            else: t.insert(i, random.choice(KW))
        out.append(' '.join(t))
open(sys.argv[3], 'w').write('\n'.join(out)+'\n')
print(len(out))
