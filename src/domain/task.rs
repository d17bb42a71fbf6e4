//! The shared task list's records and rules (SPEC section 9). Filled in by the task-list work.
