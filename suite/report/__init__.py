"""Reading run records into tables, plots and the HTML report (``python -m suite.report``)."""
