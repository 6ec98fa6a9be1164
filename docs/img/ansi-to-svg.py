#!/usr/bin/env python3
"""A terminal capture with colours (tmux capture-pane -e -p) as an SVG.

    ansi-to-svg.py < capture.txt > screen.svg

Understands what `gpuwatch top` draws with: SGR reset, bold, dim, reverse
and the 8 + 8 standard colours, foreground and background.  docs/top.md
says how docs/img/top.svg was made.
"""
import re
import sys
from html import escape

COLOURS = ["#1e1e1e", "#e05252", "#5fba5f", "#d7b43c", "#5a8fd8", "#b36bd1", "#45b8c0", "#d0d0d0"]
BRIGHT = ["#6b6b6b", "#ff7070", "#80e080", "#ffe070", "#80b0ff", "#e090ff", "#70e0e8", "#ffffff"]
FG, BG = "#d0d0d0", "#1e1e1e"
CW, CH = 8.4, 17


def cells(line):
    """(char, fg, bg, bold) for every column of LINE."""
    fg = bg = None
    bold = dim = rev = False
    out = []
    for part in re.split(r"(\x1b\[[0-9;]*m)", line):
        m = re.fullmatch(r"\x1b\[([0-9;]*)m", part)
        if not m:
            for ch in part:
                f, b = fg or FG, bg or BG
                if rev:
                    f, b = b, f
                if dim and not rev:
                    f = "#8a8a8a"
                out.append((ch, f, b, bold))
            continue
        codes = [int(c) if c else 0 for c in m.group(1).split(";")]
        i = 0
        while i < len(codes):
            c = codes[i]
            if c == 0:
                fg = bg = None
                bold = dim = rev = False
            elif c == 1:
                bold = True
            elif c == 2:
                dim = True
            elif c == 7:
                rev = True
            elif c == 22:
                bold = dim = False
            elif c == 27:
                rev = False
            elif 30 <= c <= 37:
                fg = COLOURS[c - 30]
            elif c == 39:
                fg = None
            elif 40 <= c <= 47:
                bg = COLOURS[c - 40]
            elif c == 49:
                bg = None
            elif 90 <= c <= 97:
                fg = BRIGHT[c - 90]
            elif c in (38, 48) and i + 2 < len(codes) and codes[i + 1] == 5:
                n = codes[i + 2]
                col = (COLOURS + BRIGHT)[n] if n < 16 else FG
                if c == 38:
                    fg = col
                else:
                    bg = col
                i += 2
            i += 1
    return out


def main():
    lines = sys.stdin.read().split("\n")
    while lines and not lines[-1]:
        lines.pop()
    cols = max(80, max((len(cells(l)) for l in lines), default=0))
    w, h = cols * CW + 16, len(lines) * CH + 16
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">' % (w, h, w, h),
         '<rect width="100%%" height="100%%" fill="%s" rx="6"/>' % BG,
         '<g font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="14" xml:space="preserve" style="white-space: pre">']
    for y, line in enumerate(lines):
        cs = cells(line)
        ty = 8 + y * CH
        x = 0
        while x < len(cs):  # backgrounds, in runs
            b = cs[x][2]
            e = x
            while e < len(cs) and cs[e][2] == b:
                e += 1
            if b != BG:
                o.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"/>'
                         % (8 + x * CW, ty, (e - x) * CW, CH, b))
            x = e
        x = 0
        while x < len(cs):  # text, in runs of one style
            f, bold = cs[x][1], cs[x][3]
            e = x
            while e < len(cs) and (cs[e][1], cs[e][3]) == (f, bold):
                e += 1
            # no-break spaces: renderers collapse plain ones
            text = "".join(c[0] for c in cs[x:e])
            if text.strip():
                o.append('<text x="%.1f" y="%.1f" fill="%s"%s>%s</text>'
                         % (8 + x * CW, ty + 13, f, ' font-weight="bold"' if bold else "", escape(text).replace(" ", "\u00a0")))
            x = e
    o.append("</g></svg>")
    print("\n".join(o))


if __name__ == "__main__":
    main()
