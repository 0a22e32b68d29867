import not_installed_anywhere  # LLLM skips a module that does not import, and so does the run
