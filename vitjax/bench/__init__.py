"""`vitjax bench`: how fast the train step, inference and the input pipeline run, and how that compares.

One run measures everything side by side in one process: the vitjax train step and inference (as the
trainer compiles them), the same architecture in timm (PyTorch), a large matmul as the machine's peak,
and the input pipeline alone. The workloads take turns, round after round, and the report gives medians
over rounds and medians of per-round ratios, so that a machine whose load changes (a shared CPU) moves
both sides of a ratio together.

    timing.py     workloads, alternating rounds, load average and memory of the process
    peak.py       the measured matmul peak and datasheet peaks of accelerators
    jax_model.py  the vitjax train step and inference, XLA's FLOP count, compile time, memory
    timm_model.py the same model in timm: AdamW train step and inference, eager or torch.compile
    timm_nets.py  which timm network mirrors which vitjax family (ViT, Swin with vitjax's weights)
    sam_model.py  a SAM config instead: its image encoder and prompt answers beside segment-anything's
    model_flops.py the hand count of a model's matmul FLOPs per image, the MFU numerator
    pipeline.py   images per second that `vitjax.data.train_batches` delivers
    report.py     the summary (JSON) and its table
    run.py        the command line: `vitjax bench --config configs/...py[:arg] [--config.key=value ...]`
"""
