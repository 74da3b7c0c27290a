"""HTML element names promptfoo's is-html recognises (0.123.1)."""

HTML_ELEMENTS = frozenset("""
html head title base link meta style body article section nav aside h1 h2 h3 h4 h5 h6
header footer address p hr pre blockquote ol ul li dl dt dd figure figcaption main div a em
strong small s cite q dfn abbr ruby rt rp data time code var samp kbd sub sup i b u mark
bdi bdo span br wbr img iframe embed object param picture source video audio track map area
svg math script noscript canvas ins del table caption colgroup col tbody thead tfoot tr td
th form label input button select datalist optgroup option textarea output progress meter
fieldset legend details summary dialog menu slot template
""".split())
