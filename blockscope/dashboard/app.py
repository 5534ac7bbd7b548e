"""The Streamlit main script that `blockscope dashboard` and `make run` serve.

It lives in a folder with no `pages/` beside it: Streamlit runs its old multipage mode for a main script that has
one, and a first visit to a page's address then shows a "Page not found" dialog.
"""

from blockscope.dashboard import main

main()
