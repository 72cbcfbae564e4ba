"""Promptable segmentation with Segment Anything (vitjax/models/sam.py): prompts.py checks a prompt and puts
it in the model's frame, predictor.py embeds an image once and answers prompts on it under jit."""
