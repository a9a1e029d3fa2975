-- read-compatible: the workspace's identity; reads never need it (an older read-only file is named by its location alone)
-- A workspace's random identity: the team server's advert names it, and a client relays a command only
-- to the server of the workspace it was pointed at (a folder copied while a server runs keeps the advert;
-- see workbench/identity.py). A backup carries it; a restore keeps it.
INSERT INTO meta SELECT 'workspace_id', replace(CAST(gen_random_uuid() AS VARCHAR), '-', '')
    WHERE NOT EXISTS (SELECT 1 FROM meta WHERE key = 'workspace_id');
