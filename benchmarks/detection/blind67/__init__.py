"""Sixty-seventh blind split of the detection benchmark (`python -m benchmarks.detection.run --suite blind67`).

Six new training settings in three modules (`stores`: a hospital pharmacy's stock-out forecast for its ward
cabinets' pockets (a ReLU MLP over the ward and the drug class embedded), a mushroom farm's first-flush yield from
its rooms' daily climate records (a 1-D CNN); `lofts`: a sail loft's defect detector on the beta gauge's scans of its
laminated sailcloth (a tanh autoencoder), a violin maker's hours until a coat of oil varnish can be rubbed out (a tanh
MLP under the L1 loss); `yards`: an electric bus depot's overnight charging need of each bus from its telematics (an
LSTM), an avalanche service's extended-column-test result of its snow profiles (a small self-attention encoder over
the layers)), each script making its own synthetic data from the seed and building its optimizer by the thirteenth
split's `optimizers`; `suite` declares the programs and binds them to the earlier splits' runner and oracle; `smoke`
runs them with no rule. Written blind to the rules and frozen before scoring; README.md has the smoke tables.
"""
