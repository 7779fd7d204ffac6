"""The report's pages: analysis and findings in, HTML, CSV and summary.json out. Four rooms, one role each, in the
order a build goes through them:

* `plan/`    planning: the page protocol (`page`: `PageKind`, `Page`, `SitePlan`), the list of pages in nav order
             (`registry`) and the planner that turns an analysis into a `SitePlan` (`planner`). No I/O.
* `pages/`   one module per page of the report (overview, step trace, overlap, communication, execution and
             strategy, resources, rules). Each turns the analysis into its page's context dataclass and chart
             specs. `pages/rank/`: a rank's page, its typed sections (`sections`) and their builders
             (`communication`, `overlap`, `resources`).
* `views/`   view shaping shared by pages: plain-data rows and columns cut from the analysis (communication,
             steps, timeline, idle time, efficiency, values), the data-quality texts in the report's language
             (`problems`, `problem_texts`) and summary.json's content (`summary`).
* `render/`  rendering and writing: the Jinja environment (`jinja_env`), table cells built in Python
             (`html_rows`), CSV text, the style/script/Vega assets and their two modes (`assets`, `page_assets`:
             linked files or inlined), findings.md, and the writers: `builder` (site, single file, runs index) and
             `output` (the only code that creates, replaces or removes output files; compare and trend write
             through it too).

Imports run one way: plan -> pages -> views; render -> plan (the protocol) and views. Every page path and link is
`reportgen.urls` (templates: `url(paths.X)`). Page marks (slow rank, hot cell) come from the findings through
`rules.highlights`.
"""
