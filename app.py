"""Blockscope dashboard in a checkout: `streamlit run app.py` (what `make run` does). The router is
blockscope/dashboard.py; the installed command `blockscope dashboard` runs that file directly."""

from blockscope.dashboard import main

main()
