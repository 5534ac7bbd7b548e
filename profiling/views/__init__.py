"""Views: results tables -> page data, plotly figures, the HTML report and the export. Pure functions of loaded
results; nothing here measures or compiles. Never imports streamlit (pages do)."""
