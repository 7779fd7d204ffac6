"""Planning the site: the page protocol (`page`), the pages in nav order (`registry`), and `planner.plan_pages`."""
