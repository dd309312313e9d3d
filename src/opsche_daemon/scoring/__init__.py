"""Learned and external scoring (seed 002): features, scorers, datasets, training, the service.

``features`` is the one feature extraction (training and serving share it); ``models`` the
scorers (baselines, opsche's default scoring, learned models and their files); ``dataset`` turns
real placements into ranking groups by a sweep line; ``learn`` trains and measures (R², top-1);
``report`` writes the study's table and chart; ``service`` and ``view`` are ``opsche score
serve``, a kube-scheduler extender. scikit-learn, LightGBM, pandas, FastAPI and uvicorn (the
``learn`` extra) are imported only where used.
"""
