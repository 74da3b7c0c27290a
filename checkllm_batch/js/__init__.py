"""JavaScript and promptfoo value semantics, each rule defined once: JS values and printing
(jsvalue, jsmethods), JSON text as JavaScript reads it (jsontext, jsonvalue), whitespace,
Nunjucks templates (nunjucks, nunjucks_filters, template) and YAML 1.2 (yaml12)."""
