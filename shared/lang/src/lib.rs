//! The .stm language.
