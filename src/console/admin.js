// The console's admin script: the configuration editor, history and rollback, for admins only.
'use strict';
