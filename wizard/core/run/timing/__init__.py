"""Time: where each step's time goes (``steps``), what to change when one phase dominates (``advice``), and how
long the configured full run would take on this hardware (``forecast``). Pure: metric series in."""
