"""promptfoo's template language: Nunjucks semantics through spec.nunjucks (issue 9).

Every row of CASES was run through promptfoo 0.123.1 with the offline kit (an `equals`, or for
a list `contains-any`, whose value is the template, over the row's vars); the expected value is
promptfoo's `renderedAssertionValue`, or ERROR where promptfoo failed the test case with a
`Template render error`. The suite as run and the kit's output are in
tests/data/promptfoo_nunjucks.yaml; `test_table_is_the_kit_record` keeps the two in step.
Rows marked `_differs` are the known differences from promptfoo (docs/templates.md).
"""

import math
from pathlib import Path

import pytest
import yaml

from checkllm_batch.js import nunjucks

ERROR = "<promptfoo: Template render error>"
KIT = Path(__file__).parents[1] / "data" / "promptfoo_nunjucks.yaml"


def _differs(*row, reason):
    return pytest.param(*row, marks=pytest.mark.xfail(strict=True, reason=reason), id=row[0])


CASES = [
    # (id, template, vars, promptfoo's rendered value)
    # --- filters
    ('upper', '{{ a | upper }}', {'a': 'hello'}, 'HELLO'),
    ('lower', '{{ a | lower }}', {'a': 'HeLLo'}, 'hello'),
    ('upper-null', '{{ a | upper }}', {'a': None}, ''),
    ('upper-number', '{{ a | upper }}', {'a': 5}, ERROR),  # promptfoo: TypeError: str.toUpperCase is not a function
    ('trim', '{{ a | trim }}', {'a': '  padded \t'}, 'padded'),
    ('trim-nbsp', '{{ a | trim }}', {'a': '\xa0x\u3000'}, 'x'),
    ('trim-undefined', '{{ missing | trim }}', {}, ERROR),  # promptfoo: TypeError: Cannot read properties of undefined (reading 'replace')
    ('dump-object', '{{ a | dump }}', {'a': {'k': 1.0, 'l': [1, 'x'], 'n': None}}, '{"k":1,"l":[1,"x"],"n":null}'),
    ('dump-indent', '{{ a | dump(2) }}', {'a': {'k': 1, 'l': [1]}}, '{\n  "k": 1,\n  "l": [\n    1\n  ]\n}'),
    ('dump-string', '{{ a | dump }}', {'a': 'say "hi"\n'}, '"say \\"hi\\""'),
    ('dump-undefined', '{{ missing | dump }}', {}, ''),
    ('dump-small-float', '{{ a | dump }}', {'a': [1e-07, 0.5]}, '[1e-7,0.5]'),
    ('default-undefined', "{{ missing | default('x') }}", {}, 'x'),
    ('default-empty', "{{ a | default('x') }}", {'a': ''}, ''),
    ('default-null', "{{ a | default('x') }}", {'a': None}, ''),
    ('default-bool-empty', "{{ a | default('x', true) }}", {'a': ''}, 'x'),
    ('default-bool-zero', "{{ a | default('x', true) }}", {'a': 0}, 'x'),
    ('default-bool-list', "{{ a | default('x', true) }}", {'a': []}, ''),
    ('length-string', '{{ a | length }}', {'a': 'héllo'}, '5'),
    ('length-emoji', '{{ a | length }}', {'a': '🎉'}, '2'),
    ('length-list', '{{ a | length }}', {'a': [1, 2, 3]}, '3'),
    ('length-mapping', '{{ a | length }}', {'a': {'x': 1, 'y': 2}}, '2'),
    ('length-undefined', '{{ missing | length }}', {}, '0'),
    ('length-number', '{{ a | length }}', {'a': 5}, ''),
    ('join', "{{ a | join(', ') }}", {'a': [1, 'x', None, True]}, '1, x, , true'),
    ('join-default', '{{ o.a | join }}', {'o': {'a': ['x', 'y']}}, 'xy'),
    ('first-last', '{{ a | first }}-{{ a | last }}', {'a': [7, 8, 9]}, '7-9'),
    ('first-last-strings', '{{ o.a | first }}-{{ o.a | last }}', {'o': {'a': ['p', 'q', 'r']}}, 'p-r'),
    ('first-empty', '{{ a | first }}', {'a': []}, ''),
    ('first-string', '{{ a | first }}', {'a': 'abc'}, 'a'),
    ('replace', "{{ a | replace('a', 'o') }}", {'a': 'banana'}, 'bonono'),
    ('replace-count', "{{ a | replace('a', 'o', 2) }}", {'a': 'banana'}, 'bonona'),
    ('replace-empty-old', "{{ a | replace('', '.') }}", {'a': 'abc'}, '.a.b.c.'),
    ('title', '{{ a | title }}', {'a': 'hello-world foo BAR'}, 'Hello-world Foo Bar'),
    ('capitalize', '{{ a | capitalize }}', {'a': 'hELLO World'}, 'Hello world'),
    ('int', '{{ a | int }}', {'a': '3.7'}, '3'),
    ('int-prefix', '{{ a | int }}', {'a': ' 42px'}, '42'),
    ('int-invalid', '{{ a | int }}', {'a': 'abc'}, ''),
    ('int-invalid-default', '{{ a | int(7) }}', {'a': 'abc'}, '7'),
    ('int-float', '{{ a | int }}', {'a': -3.9}, '-3'),
    ('float', '{{ a | float }}', {'a': '2.50kg'}, '2.5'),
    ('float-invalid', '{{ a | float }}', {'a': 'kg'}, ''),
    ('round', '{{ a | round }}', {'a': 2.5}, '3'),
    ('round-negative-half', '{{ a | round }}', {'a': -2.5}, '-2'),
    ('round-precision', '{{ a | round(1) }}', {'a': 2.45}, '2.5'),
    ('round-floor', "{{ a | round(0, 'floor') }}", {'a': 2.9}, '2'),
    ('safe', '{{ a | safe }}', {'a': '<b>&</b>'}, '<b>&</b>'),
    ('escape', '{{ a | escape }}', {'a': '<a href="x">\'&\'\\'}, '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&#92;'),
    ('escape-after-safe', '{{ a | safe | escape }}', {'a': '<b>'}, '<b>'),
    ('load', '{{ (a | load).k }}', {'a': '{"k": "v"}'}, 'v'),
    ('load-dump', '{{ a | load | dump }}', {'a': '[1, 2.0, {"x": null}]'}, '[1,2,{"x":null}]'),
    ('load-invalid', '{{ a | load }}', {'a': 'not json'}, ERROR),  # promptfoo: SyntaxError: Unexpected token 'o', "not json" is not valid JSON
    ('abs-string-truncate', '{{ a | abs }}|{{ b | string }}|{{ c | truncate(9) }}', {'a': '-3', 'b': 1.0, 'c': 'hello big world'}, '3|1|hello big...'),
    ('nl2br', '{{ a | nl2br }}', {'a': 'x\r\ny\nz'}, 'x<br />\ny<br />\nz'),
    ('aliases', "{{ missing | d('dflt') }}|{{ a | e }}", {'a': '<&>'}, 'dflt|&lt;&amp;&gt;'),
    ('filter-chain', "{{ a | trim | upper | replace('B', '-') }}", {'a': '  abc  '}, 'A-C'),
    ('unknown-filter', '{{ a | nosuch }}', {'a': 'x'}, ERROR),  # promptfoo: Error: filter not found: nosuch
    # --- conditionals and tests
    ('if-elif-else', '{% if a > 5 %}big{% elif a > 2 %}mid{% else %}small{% endif %}', {'a': 3}, 'mid'),
    ('if-string-number', '{% if a > 5 %}big{% else %}small{% endif %}', {'a': '10'}, 'big'),
    ('if-loose-equal', '{% if a == 1 %}one{% else %}other{% endif %}', {'a': '1'}, 'one'),
    ('if-empty-list', '{% if a %}yes{% else %}no{% endif %}', {'a': []}, 'yes'),
    ('if-empty-object', '{% if a %}yes{% else %}no{% endif %}', {'a': {}}, 'yes'),
    ('if-zero-string', '{% if a %}yes{% else %}no{% endif %}', {'a': '0'}, 'yes'),
    ('if-undefined', '{% if missing %}yes{% else %}no{% endif %}', {}, 'no'),
    ('if-and-not', "{% if a == 'x' and not b %}ok{% endif %}", {'a': 'x', 'b': False}, 'ok'),
    ('if-in', "{% if 'an' in a %}found{% endif %}", {'a': 'banana'}, 'found'),
    ('if-defined', '{% if a is defined %}d{% endif %}{% if missing is defined %}m{% endif %}', {'a': None}, 'd'),
    ('if-null-equal', '{% if missing == null %}nullish{% endif %}', {}, 'nullish'),
    ('test-sameas', "{{ a is sameas('1') }}|{{ a is sameas(1) }}|{{ a is eq(1.0) }}", {'a': 1}, 'false|true|true'),
    ('test-compare', "{{ a is gt(5) }}|{{ a is lessthan(5) }}|{{ a is ne('10') }}", {'a': '10'}, 'true|false|false'),
    ('test-null-number', '{{ a is null }}|{{ missing is null }}|{{ b is number }}|{{ c is number }}', {'a': None, 'b': 1.5, 'c': True}, 'true|false|true|false'),
    ('test-truthy-falsy', '{{ a is truthy }}|{{ b is falsy }}', {'a': [], 'b': ''}, 'true|true'),
    ('test-none', '{{ a is none }}', {'a': None}, 'true'),
    ('ternary', "{{ 'yes' if a else 'no' }}", {'a': 0}, 'no'),
    ('or-default', "{{ a or 'fallback' }}", {'a': ''}, 'fallback'),
    # --- loops, set, raw blocks, comments, whitespace control
    ('for-loop-index', '{% for x in o.a %}{{ loop.index }}:{{ x }} {% endfor %}', {'o': {'a': ['p', 'q']}}, '1:p 2:q '),
    ('for-last', '{% for x in a %}{{ x }}{% if not loop.last %}, {% endif %}{% endfor %}', {'a': [1, 2, 3]}, '1, 2, 3'),
    ('for-else', '{% for x in a %}{{ x }}{% else %}none{% endfor %}', {'a': []}, 'none'),
    ('for-object-pairs', '{% for k, v in a %}{{ k }}={{ v }};{% endfor %}', {'a': {'x': 1, 'y': 2}}, 'x=1;y=2;'),
    ('for-object-single', '{% for k in a %}{{ k }};{% endfor %}', {'a': {'x': 1}}, ''),
    ('set', "{% set greeting = 'Hi ' ~ a %}{{ greeting }}!", {'a': 'Ann'}, 'Hi Ann!'),
    ('raw', '{% raw %}{{ a }} {% if %}{% endraw %}', {'a': 'x'}, '{{ a }} {% if %}'),
    ('comment', 'a{# hidden {{ b }} #}c', {'b': 'B'}, 'ac'),
    ('whitespace-control', 'x {%- if true -%} y {%- endif -%} z', {}, 'xyz'),
    ('whitespace-output', '[ {{- a -}} ]', {'a': 'v'}, '[v]'),
    # --- undefined and nested vars
    ('undefined', '[{{ missing }}]', {}, '[]'),
    ('undefined-attribute', '[{{ a.nope }}][{{ missing.a.b }}]', {'a': {'k': 1}}, '[][]'),
    ('undefined-of-null', '[{{ a.b }}]', {'a': None}, '[]'),
    ('nested', '{{ a.b.c }}', {'a': {'b': {'c': 'deep'}}}, 'deep'),
    ('nested-brackets', "{{ a['b']['c'] }}", {'a': {'b': {'c': 'deep'}}}, 'deep'),
    ('nested-index', '{{ a[1].n }}', {'a': [{'n': 1}, {'n': 2}]}, '2'),
    ('index-out-of-range', '[{{ a[5] }}]', {'a': [1]}, '[]'),
    ('key-named-like-method', '{{ a.items }}|{{ a.keys }}', {'a': {'items': 'I', 'keys': 'K'}}, 'I|K'),
    ('string-length', '{{ a.length }}', {'a': 'abcd'}, '4'),
    ('list-length', '{{ a.length }}', {'a': [1, 2]}, '2'),
    # --- how values print
    ('print-list', '{{ a }}', {'a': [1, 2]}, '1,2'),
    ('print-nested-list', '{{ a }}', {'a': [[1, 2], [3, None]]}, '1,2,3,'),
    ('print-object', '{{ a }}', {'a': {'k': 1}}, '[object Object]'),
    ('print-list-of-objects', '{{ a }}', {'a': [{'k': 1}, None]}, '[object Object],'),
    ('print-null', '[{{ a }}]', {'a': None}, '[]'),
    ('print-true-false', '{{ a }}/{{ b }}', {'a': True, 'b': False}, 'true/false'),
    ('print-float-whole', '{{ a }}', {'a': 1.0}, '1'),
    ('print-float-sum', '{{ a + b }}', {'a': 0.1, 'b': 0.2}, '0.30000000000000004'),
    ('print-1e21', '{{ a }}', {'a': 1e+21}, '1e+21'),
    ('print-1e20', '{{ a }}', {'a': 1e+20}, '100000000000000000000'),
    ('print-small', '{{ a }} {{ b }}', {'a': 1e-07, 'b': 1e-06}, '1e-7 0.000001'),
    ('print-negative-zero', '{{ a }}', {'a': -0.0}, '0'),
    ('print-big-int', '{{ a }}', {'a': 12345678901234567890}, '12345678901234567000'),
    ('print-empty', '[{{ a }}]', {'a': ''}, '[]'),
    ('print-unicode', '{{ a }}', {'a': '日本語 🎉 é'}, '日本語 🎉 é'),
    # --- arithmetic and concatenation
    ('plus-strings', '{{ a + b }}', {'a': 'foo', 'b': 'bar'}, 'foobar'),
    ('plus-string-number', '{{ a + 1 }}', {'a': '1'}, '11'),
    ('plus-numbers', '{{ a + 1 }}', {'a': 1}, '2'),
    ('plus-null', '{{ a + 1 }}', {'a': None}, '1'),
    ('plus-undefined', "{{ missing + 'x' }}", {}, 'undefinedx'),
    ('tilde', "{{ a ~ '-' ~ b }}", {'a': 'x', 'b': 2}, 'x-2'),
    ('tilde-null-bool', '{{ a ~ b ~ c }}', {'a': None, 'b': True, 'c': 1.5}, 'nulltrue1.5'),
    ('tilde-undefined', "{{ missing ~ 'x' }}", {}, 'undefinedx'),
    ('arith', '{{ a * 2 }} {{ a / 4 }} {{ a // 4 }} {{ a % 4 }} {{ 2 ** 3 }}', {'a': 10}, '20 2.5 2 2 8'),
    ('divide-by-zero', '{{ a / 0 }}', {'a': 1}, 'Infinity'),
    ('minus-text', '{{ a - 1 }}', {'a': 'abc'}, 'NaN'),
    ('plus-tilde-precedence', '{{ 1 + 2 ~ 3 }}', {}, '33'),
    # --- templates and trailing newlines (one \n cut from string vars only)
    ('empty-template', '', {}, ''),  # promptfoo passes: equals "" on the empty output
    ('template-trailing-newline', '{{ a }}\n', {'a': 'x'}, 'x\n'),
    ('no-template', 'plain text', {}, 'plain text'),  # promptfoo reason: Expected output "" to equal "plain text"
    ('var-newline', '[{{ a }}]', {'a': 'line\n'}, '[line]'),
    ('var-two-newlines', '[{{ a }}]', {'a': 'line\n\n'}, '[line\n]'),
    ('var-crlf', '[{{ a | dump }}]', {'a': 'line\r\n'}, '["line\\r"]'),
    ('var-only-newline', '[{{ a }}]', {'a': '\n'}, '[]'),
    ('var-leading-newline', '[{{ a }}]', {'a': '\nline'}, '[\nline]'),
    ('var-list-newline', '[{{ a[1] | dump }}]', {'a': [1, 'line\n']}, '["line\\n"]'),
    ('var-object-newline', '[{{ a.k | dump }}]', {'a': {'k': 'v\n'}}, '["v\\n"]'),
    # --- var-to-var references (promptfoo's resolveVariables)
    ('ref', '{{ a }}', {'a': '{{b}}', 'b': 'B'}, 'B'),
    ('ref-spaces', '{{ a }}', {'a': '<{{ b }}>', 'b': 'B'}, '<B>'),
    ('ref-two', '{{ a }}', {'a': '{{b}}+{{c}}', 'b': 'B', 'c': 'C'}, 'B+C'),
    ('ref-chain', '{{ a }}', {'a': '{{b}}', 'b': '{{c}}', 'c': 'C'}, 'C'),
    ('ref-chain-deep', '{{ v1 }}', {'v1': '{{v2}}', 'v2': '{{v3}}', 'v3': '{{v4}}', 'v4': '{{v5}}', 'v5': '{{v6}}', 'v6': '{{v7}}', 'v7': 'end'}, 'end'),
    ('ref-undefined-first', '{{ a }}', {'a': '{{zz}} {{b}}', 'b': 'B'}, '{{zz}} {{b}}'),
    ('ref-null', '{{ a }}', {'a': 'x{{n}}', 'n': None}, 'xnull'),
    ('ref-number', '{{ a }}', {'a': '{{n}}', 'n': 1.0}, '1'),
    ('ref-list', '{{ a }}', {'a': '{{l}}', 'l': [1, 2]}, '1,2'),
    ('ref-object', '{{ a }}', {'a': '{{o}}', 'o': {'k': 1}}, '[object Object]'),
    ('ref-dollar', '{{ a }}', {'a': 'pre{{b}}post', 'b': "[$&|$$|$`|$']"}, 'pre[[[[[{{b}}|$|pre[[[[||$|pre[[[||$|pre[[||$|pre[||$|pre|post]post]|$|pre|post]post]|$|pre[||$|pre|post]post]|$|pre|post]post]|$|pre[[||$|pre[||$|pre|post]post]|$|pre|post]post]|$|pre[||$|pre|post]post]|$|pre|post]post]|$|pre[[[||$|pre[[||$|pre[||$|pre|post]post]|$|pre|post]post]|$|pre[||$|pre|post]post]|$|pre|post]post]|$|pre[[||$|pre[||$|pre|post]post]|$|pre|post]post]|$|pre[||$|pre|post]post]|$|pre|post]post'),
    ('ref-dollar-digit', '{{ a }}', {'a': '{{b}}', 'b': '$1'}, '$1'),
    ('ref-self', '{{ a }}', {'a': '{{a}}'}, '{{a}}'),
    ('ref-newline', '[{{ a }}]', {'a': '{{b}}\n', 'b': 'B\n'}, '[B]'),
    ('ref-filter-not-resolved', '{{ a }}', {'a': '{{ b | upper }}', 'b': 'x'}, '{{ b | upper }}'),
    ('ref-if-not-resolved', '{{ a }}', {'a': '{% if true %}x{% endif %}'}, '{% if true %}x{% endif %}'),
    ('ref-unicode-name', '{{ a }}', {'a': '{{é}}', 'é': 'E'}, '{{é}}'),
    ('ref-nbsp', '{{ a }}', {'a': '{{\xa0b\xa0}}', 'b': 'B'}, 'B'),
    ('unicode-name', '{{ é }}', {'é': 'E'}, 'E'),
    ('ref-in-expression', "{{ a ~ '!' }}", {'a': '{{b}}', 'b': 'B'}, 'B!'),
    # --- lists of templates (each item rendered)
    ('list', ['{{ a }}', '{{ b | upper }}', 'plain'], {'a': 'x', 'b': 'y'}, ['x', 'Y', 'plain']),  # promptfoo reason: Expected output to contain one of "x, Y, plain"
    ('list-undefined', ['{{ missing }}', 'z'], {}, ['', 'z']),  # promptfoo passes: contains-any on the empty output, so an item rendered empty
    # --- errors: promptfoo fails the whole test case with `Template render error`
    ('error-unclosed', '{{ a', {'a': 'x'}, ERROR),  # promptfoo: expected variable end
    ('error-empty-if', '{% if %}x{% endif %}', {}, ERROR),  # promptfoo: [Line 1, Column 7] unexpected token: %}
    ('error-stray-endif', 'x{% endif %}', {}, ERROR),  # promptfoo: [Line 1, Column 5] unknown block tag: endif
    ('error-unclosed-block', '{% if a %}x', {'a': 1}, ERROR),  # promptfoo: parseIf: expected elif, else, or endif, got end of file
    ('error-call-undefined', '{{ missing() }}', {}, ERROR),  # promptfoo: Error: Unable to call `missing`, which is undefined or falsey
    ('elseif', '{% if a %}x{% elseif b %}y{% endif %}', {'b': 1}, 'y'),
    _differs('strict-equal', '{% if a === 1 %}one{% endif %}', {'a': 1}, 'one',
             reason='jinja2 has no === / !== operators'),
    ('js-method', '{{ a.toUpperCase() }}', {'a': 'x'}, 'X'),
]


def _render(template, vars):
    vars = nunjucks.resolve_vars(vars)
    if isinstance(template, list):
        return [nunjucks.render(t, vars) for t in template]
    return nunjucks.render(template, vars)


def _values(case):
    return case.values if hasattr(case, "marks") else case  # a pytest.param or a plain row


@pytest.mark.parametrize(("case_id", "template", "vars", "expected"), CASES,
                         ids=[_values(c)[0] for c in CASES])
def test_template(case_id, template, vars, expected):
    if expected == ERROR:
        with pytest.raises(nunjucks.TemplateError):
            _render(template, vars)
    else:  # compared as ascii(): a lone surrogate in a report cannot cross to pytest-xdist's controller
        assert ascii(_render(template, vars)) == ascii(expected)


# `dump(space)` is nunjucks 3.2.4's `JSON.stringify(obj, null, space)`: each expected value is
# what node 20's JSON.stringify printed for {"a": [1, "é"]} with that space (the kit's
# promptfoo install was absent when these rows were added, so not run through promptfoo).
# A space that is neither a number nor a string used to raise instead of being ignored.
DUMPED = '{"a":[1,"é"]}'
DUMP_SPACE = [
    # (id, space, what JSON.stringify printed)
    ("true", True, DUMPED),
    ("false", False, DUMPED),
    ("list", [2], DUMPED),
    ("null", None, DUMPED),
    ("empty-string", "", DUMPED),
    ("unicode-string", "é→", '{\né→"a": [\né→é→1,\né→é→"é"\né→]\n}'),
    ("fraction", 2.7, '{\n  "a": [\n    1,\n    "é"\n  ]\n}'),
    ("negative", -1, DUMPED),
    ("nan", math.nan, DUMPED),
    ("over-ten", 20, '{\n' + " " * 10 + '"a": [\n' + " " * 20 + '1,\n' + " " * 20 + '"é"\n'
     + " " * 10 + ']\n}'),
    ("infinity", math.inf, '{\n' + " " * 10 + '"a": [\n' + " " * 20 + '1,\n' + " " * 20
     + '"é"\n' + " " * 10 + ']\n}'),
]


@pytest.mark.parametrize(("case_id", "space", "expected"), DUMP_SPACE,
                         ids=[c[0] for c in DUMP_SPACE])
def test_dump_space(case_id, space, expected):
    assert nunjucks.render("{{ v | dump(s) }}", {"v": {"a": [1, "é"]}, "s": space}) == expected


def test_table_is_the_kit_record():
    kit = yaml.safe_load(KIT.read_text(encoding="utf-8"))
    tests = {t["description"]: t for t in kit["suite"]["tests"]}
    results = {r["id"]: r for r in kit["results"]}
    assert [_values(c)[0] for c in CASES] == list(tests) == list(results)
    for case_id, template, vars, expected in map(_values, CASES):
        test, result = tests[case_id], results[case_id]
        assert test["assert"][0]["value"] == template, case_id
        assert {k: v for k, v in test["vars"].items() if k != "out_b64"} == vars, case_id
        if expected == ERROR:
            assert "Template render error" in result["error"], case_id
        elif "renderedAssertionValue" in result:
            assert result["renderedAssertionValue"] == expected, case_id


# The second table is the kit's record itself (tests/data/promptfoo_nunjucks_2.yaml, written by
# tests/promptfoo_kit/record_nunjucks.py): each row's expected text is promptfoo's
# renderedAssertionValue, else the text its `equals` reason names ("" when it passed), or ERROR.
# DIFFERS_2 lists the rows we render differently (docs/templates.md, "Differences ...").
KIT_2 = Path(__file__).parents[1] / "data" / "promptfoo_nunjucks_2.yaml"
_UTF16 = "strings index by code point here, by UTF-16 unit in JavaScript"
_SAFE = "a safe string (safe, escape) is a string here, an object in Nunjucks"
_JINJA2 = "jinja2-only syntax is accepted"
_LITERAL = "number literals are lexed as jinja2 lexes them"
_RAW = "{% raw %} is jinja2's: no {% verbatim %}, an unclosed one is an error"
DIFFERS_2 = {
    **dict.fromkeys(["last-emoji", "truncate-emoji", "reverse-emoji", "rand-filter-126",
                     "rand-filter-178"], _UTF16),
    **dict.fromkeys(["rand-filter-50", "rand-filter-78", "rand-filter-83", "rand-filter-102",
                     "rand-filter-106"], _SAFE),
    **dict.fromkeys(["ternary-nested", "for-if-filter", "set-multiple", "dot-index",
                     "dot-index-obj"], _JINJA2),
    "kw-truncate": "a keyword argument arrives as an object, which truncate reads differently",
    **dict.fromkeys(["number-literals", "lit-007", "lit-5.", "lit-1e3", "lit-1_000", "lit-0x10",
                     "lit-1.5e-3"], _LITERAL),
    **dict.fromkeys(["raw-with-ws", "err-unclosed-raw", "verbatim"], _RAW),
    "arith-unary": "`- -a` compiles to JavaScript `--a` in Nunjucks, a syntax error",
    "str-unicode-escape": "string literals unescape as Python's: '\\u00e9' is é, not u00e9",
    "tuple-literal": "(1, 2) is a tuple here, JavaScript's comma operator in Nunjucks",
    "for-set-inside": "{% set %} in a loop does not change the variable outside it (jinja2)",
    "ws-crlf": "\\r\\n in a template's text prints as \\n",
    "macro-print-safe": "a macro's output is not a safe string here",
    "js-match": "regular-expression methods are not available",
    "js-search": "regular-expression methods are not available",
    "js-proto": "__proto__ is not a key here",
}


def _expected(result):
    if "renderedAssertionValue" in result:
        return result["renderedAssertionValue"]
    if "error" in result:
        return ERROR
    if result["pass"]:
        return ""
    prefix = 'Expected output "" to equal "'
    assert result["reason"].startswith(prefix), result
    return result["reason"][len(prefix):-1]


def _kit_2_rows():
    kit = yaml.safe_load(KIT_2.read_text(encoding="utf-8"))  # libyaml refuses "\uDF89"
    for test, result in zip(kit["suite"]["tests"], kit["results"], strict=True):
        assert test["description"] == result["id"]
        vars = {k: v for k, v in test["vars"].items() if k != "out_b64"}
        marks = ([pytest.mark.xfail(strict=True, reason=DIFFERS_2[result["id"]])]
                 if result["id"] in DIFFERS_2 else [])
        yield pytest.param(test["assert"][0]["value"], vars, _expected(result), marks=marks,
                           id=result["id"])


KIT_2_ROWS = list(_kit_2_rows())


@pytest.mark.parametrize(("template", "vars", "expected"), KIT_2_ROWS)
def test_template_kit_2(template, vars, expected):
    test_template(None, template, vars, expected)


def test_differs_2_names_rows():
    assert set(DIFFERS_2) <= {row.id for row in KIT_2_ROWS}

REFERENCED = [
    # (template, top-level names it reads: what the engine must supply per row)
    ("", set()),
    ("plain", set()),
    ("{{ a.b.c }} {{ c | upper }}", {"a", "c"}),
    ("{% set x = 1 %}{{ x }}{{ y }}", {"y"}),
    ("{% for i in items %}{{ i }}{{ loop.index }}{% endfor %}", {"items"}),
    ("{% raw %}{{ z }}{% endraw %}", set()),
    ("{{ env.KEY }}{% if missing == null %}{% endif %}", {"missing"}),  # env, null: globals
    ("{{ é }}", {"é"}),
]


@pytest.mark.parametrize(("template", "names"), REFERENCED)
def test_referenced_vars(template, names):
    assert nunjucks.referenced_vars(template) == names


SYNTAX = [
    # (template, is it a syntax error?) - the ERROR rows above that fail before any var is read
    ("", False),
    ("{{ a | upper }}", False),
    ("{% if a %}x{% elseif b %}y{% endif %}", False),
    ("{{ a", True),
    ("{% if %}x{% endif %}", True),
    ("x{% endif %}", True),
    ("{% if a %}x", True),
    ("{{ a | nosuch }}", True),  # Nunjucks finds an unknown filter only when rendering
    ("{{ 日本 }}", False),
]


@pytest.mark.parametrize(("template", "bad"), SYNTAX)
def test_syntax_error(template, bad):
    error = nunjucks.syntax_error(template)
    assert (error is not None) == bad
    if bad:
        assert repr(template) in error


NUMBERS = [
    # (value, JavaScript's String(value), checked with node 22)
    (float("nan"), "NaN"), (float("inf"), "Infinity"), (float("-inf"), "-Infinity"),
    (0.0, "0"), (-0.0, "0"), (1e-7, "1e-7"), (123e-20, "1.23e-18"), (5e-324, "5e-324"),
    (2**53 + 1, "9007199254740992"), (1.7976931348623157e308, "1.7976931348623157e+308"),
    (-1.5, "-1.5"), (0.1, "0.1"), (100, "100"), (1e21, "1e+21"), (123456789.125, "123456789.125"),
    (-0.000001234, "-0.000001234"), (10**400, "Infinity"),
]


@pytest.mark.parametrize(("value", "text"), NUMBERS)
def test_js_number(value, text):
    assert nunjucks.js_number(value) == text


def test_vars_are_not_changed():
    vars = {"a": "x\n", "b": "{{a}}", "c": {"k": ["v\n"]}}
    snapshot = {"a": "x\n", "b": "{{a}}", "c": {"k": ["v\n"]}}
    assert nunjucks.resolve_vars(vars) == {"a": "x", "b": "x", "c": {"k": ["v\n"]}}
    nunjucks.render("{{ c.k | first }}", nunjucks.resolve_vars(vars))
    assert vars == snapshot


THROUGH_JSON = [
    # (a value, what Python's json.load reads after JavaScript's JSON.stringify of it)
    (3.0, 3), (-0.0, 0), (2.5, 2.5), (12345678901234567, 12345678901234568),
    (2**64, 18446744073709552000), (1e21, 1e21), (float("nan"), None), (float("inf"), None),
    ({"l": [1.0, "Ünïcödé\n", None, True]}, {"l": [1, "Ünïcödé\n", None, True]}), ("", ""),
]


@pytest.mark.parametrize(("value", "back"), THROUGH_JSON)
def test_through_json(value, back):
    from checkllm_batch.js.jsvalue import through_json

    got = through_json(value)
    assert got == back and type(got) is type(back)
