"""Twenty-first blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind21`).

Six new training settings in three modules (`travel`: a hotel-booking cancellation predictor (an MLP over embedded
booking fields), a flight-delay regressor; `fields`: a soil-moisture sensor regressor on a small lab-measured set, a
stroke-risk classifier with temperature scaling; `commerce`: a retail price-elasticity model, a question-duplicate
detector (a GRU over pretrained word vectors)), each script making its own synthetic data from the seed and building
its optimizer by `travel.registered`; `suite` declares the programs and binds them to the earlier splits' runner and
oracle; `smoke` runs them with no rule. Written blind to the rules and frozen before scoring; README.md has the smoke
tables.
"""
