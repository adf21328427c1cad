"""The best trial's weights, back in a model, and its accuracy on the held-out digits."""

import torch
from digits import WEIGHTS, make_model, split

import tune_app

best = tune_app.best_checkpoint("results/digits")
model = make_model(best.config["hidden"])
model.load_state_dict(torch.load(best.path / WEIGHTS))

*_, x_test, y_test = split()
with torch.no_grad():
    guess = model(torch.from_numpy(x_test)).argmax(dim=1).numpy()
accuracy = (guess == y_test).mean()
print(f"trial {best.trial_id}: accuracy {accuracy:.3f} (the search said {best.score:.3f})")
