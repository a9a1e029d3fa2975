"""The core API over a team server, for a process that does not hold the workspace: the client
(``RemoteWorkbench``, what ``Workbench.connect`` returns), the codec its values cross the wire in,
and the names of the methods it may call. Only ``errors`` and ``models`` below it: the server
(above) answers it, the service (above) hands it out."""
