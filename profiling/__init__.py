"""Blockscope's profiling layers: measure (timing, sweeps, bench, tuner, backend adapters), inspect (compile facts,
occupancy, lanes, numerics), results (schema, load/save, compare, drift, revision), views (page data, figures,
report, export) and cli. docs/architecture.md states which layer may import which."""
