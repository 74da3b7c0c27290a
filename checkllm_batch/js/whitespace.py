"""JavaScript's whitespace, defined once: the characters its `\\s` matches and `trim()`
strips (ECMAScript's WhiteSpace and LineTerminator), which promptfoo splits words on.

JS_SPACE is them as characters (for str.strip and Python's re), JS_SPACE_CLASS the inside of
a Rust regex class (for Polars), JS_SPACE_RANGES their code points as ranges."""

JS_SPACE = " \t\n\x0b\x0c\r\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008" \
           "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
JS_SPACE_CLASS = "".join(f"\\x{{{ord(c):x}}}" for c in JS_SPACE)
WORD = f"[^{JS_SPACE_CLASS}]+"  # a run of characters that are not whitespace (a word)


def _ranges(chars: str) -> list[tuple[int, int]]:
    """The code points of `chars` as sorted, merged (first, last) ranges."""
    ranges: list[tuple[int, int]] = []
    for c in sorted(map(ord, chars)):
        if ranges and ranges[-1][1] + 1 == c:
            ranges[-1] = (ranges[-1][0], c)
        else:
            ranges.append((c, c))
    return ranges


JS_SPACE_RANGES = _ranges(JS_SPACE)
