"""The Autodiff backend's ops, split as in the protocol: each op's recording and its backward
rule side by side."""
