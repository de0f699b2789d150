"""Twenty-sixth blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind26`).

Six new training settings in three modules (`environment`: a streamflow forecaster (an LSTM over a catchment's rain
and temperature), a bike-sharing demand forecaster with a Poisson loss; `sensing`: a Wi-Fi indoor-localisation
regressor on signal strengths, a keystroke-dynamics authenticator; `imaging`: a pneumonia classifier on small chest
X-rays, a road-crack segmenter), each script making its own synthetic data from the seed and building its optimizer by
the thirteenth split's `optimizers` (the localisation regressor builds and registers its own); `suite` declares the
programs and binds them to the earlier splits' runner and oracle; `smoke` runs them with no rule. Written blind to the
rules and frozen before scoring; README.md has the smoke tables.
"""
