from tests.fake_openai import fake_openai, openai_settings  # noqa: F401 - fixtures for this folder
