"""Building benchmarks: Expert tasks from solved notebooks (``notebook``, with landmarks suggested by
``landmarks``), Masked tasks cut from Expert solutions (``blocks``, ``mask``), Auto tasks generated
from repositories' READMEs (``repos``, ``autogen``), and gold health checks (``gold``)."""
