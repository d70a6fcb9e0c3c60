"""Chat models behind one small interface, named ``provider/name``: ``openai/...`` (the OpenAI API
and compatible servers), ``anthropic/...`` (an extra) and ``mock/...`` (scripted)."""

from super_bench.models.base import (
    MODELS,
    ChatModel,
    Message,
    ModelOptions,
    ModelRequest,
    ModelResponse,
    create_model,
)
from super_bench.models.cache import Reply

__all__ = ["MODELS", "ChatModel", "Message", "ModelOptions", "ModelRequest", "ModelResponse", "Reply", "create_model"]
