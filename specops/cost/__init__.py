"""What a served variant spends per output token: CPU-seconds of its server, GPU energy."""
