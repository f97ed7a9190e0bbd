"""Planning: the plan model, validation, model proposals, strategies and the planner."""
