"""Blockscope dashboard from a checkout: `streamlit run app.py`. The router is blockscope/dashboard/; `make run` and
the installed `blockscope dashboard` serve blockscope/dashboard/app.py, whose folder has no pages/ beside it (here one
is, so Streamlit's old multipage mode may answer a first visit to a page's address with "Page not found")."""

from blockscope.dashboard import main

main()
