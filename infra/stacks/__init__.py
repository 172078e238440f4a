"""CDK stacks: ``EpisodicStack`` deploys the whole service for one stage."""
