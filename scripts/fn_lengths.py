#!/usr/bin/env python3
"""Functions over 100 lines (issue 42: functions under ~100 lines): prints lines, file, line, name.

A brace-matching reader (strings and // comments skipped), not a parser: good enough to keep
the rule.  Usage: python3 scripts/fn_lengths.py [src]"""
import os
import re
import sys

res=[]
for root,_,files in os.walk(sys.argv[1] if len(sys.argv)>1 else 'src'):
    for f in files:
        if not f.endswith('.rs'): continue
        p=os.path.join(root,f); lines=open(p).read().split('\n')
        i=0
        while i<len(lines):
            l=lines[i]
            m=re.match(r'\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)',l)
            if m:
                # find opening brace
                depth=0;started=False;j=i
                while j<len(lines):
                    s=re.sub(r'"(\\.|[^"\\])*"','""',lines[j]); s=re.sub(r"'(\\.|[^'\\])'","''",s); s=s.split('//')[0]
                    if not started and ';' in s and '{' not in s: break
                    for ch in s:
                        if ch=='{': depth+=1;started=True
                        elif ch=='}': depth-=1
                    if started and depth<=0: break
                    j+=1
                n=j-i+1
                if n>100: res.append((n,p,i+1,m.group(6)))
            i+=1
for r in sorted(res,reverse=True): print(*r)
