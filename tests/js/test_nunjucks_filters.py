"""promptfoo's template language (Nunjucks), rendered by jinja2 configured to match it.

Each row: template, vars, the text promptfoo 0.123.1 renders. The expected texts were written
by hand and each row was run through the real promptfoo with the offline kit as an `equals`
assertion over that text (all 43 passed there); the suite and its answers are in
tests/data/promptfoo_templates.yaml. Lists reach templates as JSON text through `| load`:
promptfoo expands a list var into several test cases, a dataset column does not.
"""

from __future__ import annotations

import pytest
from conftest import run

from checkllm_batch.js import nunjucks

CASES = [  # (template, vars, what promptfoo renders)
    ('{{ name }}', {'name': 'Ada'}, 'Ada'),
    ('{{ name | upper }}', {'name': 'Ada'}, 'ADA'),
    ('{{ name | lower }}', {'name': 'ÀDA'}, 'àda'),
    ('{{ name | trim }}', {'name': '  Ada  '}, 'Ada'),
    ('{{ name | capitalize }}', {'name': 'ada LOVELACE'}, 'Ada lovelace'),
    ('{{ name | title }}', {'name': 'ada lovelace'}, 'Ada Lovelace'),
    ("{{ name | replace('a', 'o') }}", {'name': 'banana'}, 'bonono'),
    ('{{ name | length }}', {'name': 'Ada'}, '3'),
    ('{{ items | load | length }}', {'items': '[1, 2, 3]'}, '3'),
    ("{{ items | load | join('-') }}", {'items': '["a", "b"]'}, 'a-b'),
    ('{{ items | load | first }}', {'items': '["a", "b"]'}, 'a'),
    ('{{ items | load | last }}', {'items': '["a", "b"]'}, 'b'),
    ('{{ items | load }}', {'items': '[1, "a", null]'}, '1,a,'),
    ('{{ obj }}', {'obj': {'a': 1}}, '[object Object]'),
    ('{{ obj.a }}', {'obj': {'a': {'b': 'deep'}}}, '[object Object]'),
    ('{{ obj.a.b }}', {'obj': {'a': {'b': 'deep'}}}, 'deep'),
    ("{{ obj['a']['b'] }}", {'obj': {'a': {'b': 'deep'}}}, 'deep'),
    ('{{ obj | dump }}', {'obj': {'a': [1, 2]}}, '{"a":[1,2]}'),
    ('{{ name | dump }}', {'name': 'Ada'}, '"Ada"'),
    ('{{ missing }}', {}, ''),
    ('[{{ missing.deep }}]', {}, '[]'),
    ("{{ missing | default('none') }}", {}, 'none'),
    ("{{ empty | default('none') }}", {'empty': ''}, ''),
    ("{{ empty | default('none', true) }}", {'empty': ''}, 'none'),
    ('{{ n }}', {'n': 1.0}, '1'),
    ('{{ n }}', {'n': 2.5}, '2.5'),
    ('{{ n + 1 }}', {'n': 2}, '3'),
    ('{{ flag }}', {'flag': True}, 'true'),
    ('{{ nothing }}', {'nothing': None}, ''),
    ('{% if n > 2 %}big{% else %}small{% endif %}', {'n': 3}, 'big'),
    ('{% if n > 2 %}big{% elif n > 0 %}mid{% else %}small{% endif %}', {'n': 1}, 'mid'),
    ('{% for x in items | load %}{{ loop.index }}:{{ x }} {% endfor %}', {'items': '["a", "b"]'}, '1:a 2:b '),
    ('{% raw %}{{ name }}{% endraw %}', {'name': 'Ada'}, '{{ name }}'),
    ('{# note #}Ada', {}, 'Ada'),
    ("{% set g = 'Hi' %}{{ g }} {{ name }}", {'name': 'Ada'}, 'Hi Ada'),
    ('{{ a ~ b }}', {'a': 'x', 'b': 1}, 'x1'),
    ('a {%- if true %} b {%- endif %}', {}, 'a b'),
    ('{{ text }}', {'text': 'line\n'}, 'line'),
    ('{{ text }}', {'text': 'line\n\n'}, 'line\n'),
    ('{{ text }}', {'text': 'línea ünï 日本'}, 'línea ünï 日本'),
    ('{{ answer }}', {'answer': 'It is {{ city }}', 'city': 'Paris'}, 'It is Paris'),
    ('{{ answer }}', {'answer': '{{ a }} and {{ b }}', 'a': 'x', 'b': 'y'}, 'x and y'),
    ('{{ answer }}', {'answer': '{{ nope }}'}, '{{ nope }}'),
]


@pytest.mark.parametrize("template,vars,rendered", CASES)
def test_renders_as_promptfoo(template, vars, rendered):
    assert nunjucks.render(template, nunjucks.resolve_vars(vars)) == rendered


@pytest.mark.parametrize("template,vars,rendered", [c for c in CASES if all(
    not isinstance(v, (dict, list, float, bool)) and v is not None for v in c[1].values())])
def test_renders_per_row_in_the_engine(tmp_path, template, vars, rendered):
    rows = [{"output": rendered, **vars}, {"output": rendered + "x", **vars}]
    result = run(tmp_path, {"defaultTest": {"assert": [{"type": "equals", "value": template}]}},
                 rows)
    assert result.assertion_results.sort("case_id")["status"].to_list() == ["pass", "fail"]


def test_a_template_failing_on_a_row_errors_that_row(tmp_path):
    rows = [{"output": "1", "j": "[1]"}, {"output": "1", "j": "not json"}]
    got = run(tmp_path, {"defaultTest": {"assert": [
        {"type": "equals", "value": "{{ (j | load) | first }}"}]}}, rows)
    frame = got.assertion_results.sort("case_id")
    assert frame["status"].to_list() == ["pass", "error"]
    assert "cannot render" in frame["reason"][1]
