"""The kopf controller. Importing this package registers its handlers, so both
``minds controller run`` and ``kopf run -m minds.controller`` work."""

from minds.controller import handlers as handlers
