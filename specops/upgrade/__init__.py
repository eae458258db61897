"""An upgrade check: one profile on two engine versions, measured one after the other and set side by side."""
