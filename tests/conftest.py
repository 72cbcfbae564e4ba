"""Session-wide test setup."""
import importlib.util

# torch's triton (pulled in by timm through torchvision) crashes the process with a segmentation
# fault when its LLVM library loads after TensorFlow's; loaded first, both work. The peer
# cross-checks need timm in the same process as vitjax.data's TensorFlow, so load it up front.
if importlib.util.find_spec("timm") is not None:
    import timm  # noqa: F401
