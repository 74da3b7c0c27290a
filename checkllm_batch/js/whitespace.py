"""JavaScript's whitespace, which promptfoo splits words on and trims, for the types that
must count and trim as it does."""

# JavaScript's \s (what promptfoo splits words on), as a Rust regex class.
JS_SPACE = r"\t\n\x0B\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}" \
           r"\x{3000}\x{feff}"
WORD = f"[^{JS_SPACE}]+"

# JavaScript's String.prototype.trim whitespace, as characters.
JS_CHARS = " \t\n\x0b\x0c\r\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008" \
           "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
