//! Generated from `testdata/deribit/examples/rpc_error_codes.v2_1_1.json` (Deribit API v2.1.1
//! "RPC Error Codes", 158 rows); `tests::table_equals_vector_file` keeps the two equal.
//! One row per line (`rustfmt::skip`) so the table reads like the source.

use super::ErrorInfo;

/// Every code by name (the message upper-cased, `<Placeholders>` dropped).
#[rustfmt::skip]
pub mod code {
    pub const SUCCESS: i32 = 0;
    pub const AUTHORIZATION_REQUIRED: i32 = 10000;
    pub const ERROR: i32 = 10001;
    pub const QTY_TOO_LOW: i32 = 10002;
    pub const ORDER_OVERLAP: i32 = 10003;
    pub const ORDER_NOT_FOUND: i32 = 10004;
    pub const PRICE_TOO_LOW: i32 = 10005;
    pub const PRICE_TOO_LOW4IDX: i32 = 10006;
    pub const PRICE_TOO_HIGH: i32 = 10007;
    pub const NOT_ENOUGH_FUNDS: i32 = 10009;
    pub const ALREADY_CLOSED: i32 = 10010;
    pub const PRICE_NOT_ALLOWED: i32 = 10011;
    pub const BOOK_CLOSED: i32 = 10012;
    pub const PME_MAX_TOTAL_OPEN_ORDERS: i32 = 10013;
    pub const PME_MAX_FUTURE_OPEN_ORDERS: i32 = 10014;
    pub const PME_MAX_OPTION_OPEN_ORDERS: i32 = 10015;
    pub const PME_MAX_FUTURE_OPEN_ORDERS_SIZE: i32 = 10016;
    pub const PME_MAX_OPTION_OPEN_ORDERS_SIZE: i32 = 10017;
    pub const NON_PME_MAX_FUTURE_POSITION_SIZE: i32 = 10018;
    pub const LOCKED_BY_ADMIN: i32 = 10019;
    pub const INVALID_OR_UNSUPPORTED_INSTRUMENT: i32 = 10020;
    pub const INVALID_AMOUNT: i32 = 10021;
    pub const INVALID_QUANTITY: i32 = 10022;
    pub const INVALID_PRICE: i32 = 10023;
    pub const INVALID_MAX_SHOW: i32 = 10024;
    pub const INVALID_ORDER_ID: i32 = 10025;
    pub const PRICE_PRECISION_EXCEEDED: i32 = 10026;
    pub const NON_INTEGER_CONTRACT_AMOUNT: i32 = 10027;
    pub const TOO_MANY_REQUESTS: i32 = 10028;
    pub const NOT_OWNER_OF_ORDER: i32 = 10029;
    pub const MUST_BE_WEBSOCKET_REQUEST: i32 = 10030;
    pub const INVALID_ARGS_FOR_INSTRUMENT: i32 = 10031;
    pub const WHOLE_COST_TOO_LOW: i32 = 10032;
    pub const NOT_IMPLEMENTED: i32 = 10033;
    pub const TRIGGER_PRICE_TOO_HIGH: i32 = 10034;
    pub const TRIGGER_PRICE_TOO_LOW: i32 = 10035;
    pub const INVALID_MAX_SHOW_AMOUNT: i32 = 10036;
    pub const NON_PME_TOTAL_SHORT_OPTIONS_POSITIONS_SIZE: i32 = 10037;
    pub const PME_MAX_RISK_REDUCING_ORDERS: i32 = 10038;
    pub const NOT_ENOUGH_FUNDS_IN_CURRENCY: i32 = 10039;
    pub const RETRY: i32 = 10040;
    pub const SETTLEMENT_IN_PROGRESS: i32 = 10041;
    pub const PRICE_WRONG_TICK: i32 = 10043;
    pub const TRIGGER_PRICE_WRONG_TICK: i32 = 10044;
    pub const CAN_NOT_CANCEL_LIQUIDATION_ORDER: i32 = 10045;
    pub const CAN_NOT_EDIT_LIQUIDATION_ORDER: i32 = 10046;
    pub const MATCHING_ENGINE_QUEUE_FULL: i32 = 10047;
    pub const NOT_ON_THIS_SERVER: i32 = 10048;
    pub const CANCEL_ON_DISCONNECT_FAILED: i32 = 10049;
    pub const TOO_MANY_CONCURRENT_REQUESTS: i32 = 10066;
    pub const DISABLED_WHILE_POSITION_LOCK: i32 = 10072;
    pub const ALREADY_FILLED: i32 = 11008;
    pub const MAX_SPOT_OPEN_ORDERS: i32 = 11013;
    pub const POST_ONLY_PRICE_MODIFICATION_NOT_POSSIBLE: i32 = 11021;
    pub const MAX_SPOT_ORDER_QUANTITY: i32 = 11022;
    pub const INVALID_ARGUMENTS: i32 = 11029;
    pub const OTHER_REJECT: i32 = 11030;
    pub const OTHER_ERROR: i32 = 11031;
    pub const NO_MORE_TRIGGERS: i32 = 11035;
    pub const INVALID_TRIGGER_PRICE: i32 = 11036;
    pub const OUTDATED_INSTRUMENT_FOR_IV_ORDER: i32 = 11037;
    pub const NO_ADV_FOR_FUTURES: i32 = 11038;
    pub const NO_ADV_POSTONLY: i32 = 11039;
    pub const NOT_ADV_ORDER: i32 = 11041;
    pub const PERMISSION_DENIED: i32 = 11042;
    pub const BAD_ARGUMENT: i32 = 11043;
    pub const NOT_OPEN_ORDER: i32 = 11044;
    pub const INVALID_EVENT: i32 = 11045;
    pub const OUTDATED_INSTRUMENT: i32 = 11046;
    pub const UNSUPPORTED_ARG_COMBINATION: i32 = 11047;
    pub const WRONG_MAX_SHOW_FOR_OPTION: i32 = 11048;
    pub const BAD_ARGUMENTS: i32 = 11049;
    pub const BAD_REQUEST: i32 = 11050;
    pub const SYSTEM_MAINTENANCE: i32 = 11051;
    pub const SUBSCRIBE_ERROR_UNSUBSCRIBED: i32 = 11052;
    pub const TRANSFER_NOT_FOUND: i32 = 11053;
    pub const POST_ONLY_REJECT: i32 = 11054;
    pub const POST_ONLY_NOT_ALLOWED: i32 = 11055;
    pub const UNAUTHENTICATED_PUBLIC_REQUESTS_TEMPORARILY_DISABLED: i32 = 11056;
    pub const INVALID_ADDR: i32 = 11090;
    pub const INVALID_TRANSFER_ADDRESS: i32 = 11091;
    pub const ADDRESS_ALREADY_EXIST: i32 = 11092;
    pub const MAX_ADDR_COUNT_EXCEEDED: i32 = 11093;
    pub const INTERNAL_SERVER_ERROR: i32 = 11094;
    pub const DISABLED_DEPOSIT_ADDRESS_CREATION: i32 = 11095;
    pub const ADDRESS_BELONGS_TO_USER: i32 = 11096;
    pub const NO_DEPOSIT_ADDRESS: i32 = 11097;
    pub const ACCOUNT_LOCKED: i32 = 11098;
    pub const TOO_MANY_SUBACCOUNTS: i32 = 12001;
    pub const WRONG_SUBACCOUNT_NAME: i32 = 12002;
    pub const LOGIN_OVER_LIMIT: i32 = 12003;
    pub const REGISTRATION_OVER_LIMIT: i32 = 12004;
    pub const COUNTRY_IS_BANNED: i32 = 12005;
    pub const TRANSFER_NOT_ALLOWED: i32 = 12100;
    pub const SECURITY_KEY_AUTHORIZATION_OVER_LIMIT: i32 = 12998;
    pub const INVALID_CREDENTIALS: i32 = 13004;
    pub const PWD_MATCH_ERROR: i32 = 13005;
    pub const SECURITY_ERROR: i32 = 13006;
    pub const USER_NOT_FOUND: i32 = 13007;
    pub const REQUEST_FAILED: i32 = 13008;
    pub const UNAUTHORIZED: i32 = 13009;
    pub const VALUE_REQUIRED: i32 = 13010;
    pub const VALUE_TOO_SHORT: i32 = 13011;
    pub const UNAVAILABLE_IN_SUBACCOUNT: i32 = 13012;
    pub const INVALID_PHONE_NUMBER: i32 = 13013;
    pub const CANNOT_SEND_SMS: i32 = 13014;
    pub const INVALID_SMS_CODE: i32 = 13015;
    pub const INVALID_INPUT: i32 = 13016;
    pub const INVALID_CONTENT_TYPE: i32 = 13018;
    pub const ORDERBOOK_CLOSED: i32 = 13019;
    pub const NOT_FOUND: i32 = 13020;
    pub const FORBIDDEN: i32 = 13021;
    pub const METHOD_SWITCHED_OFF_BY_ADMIN: i32 = 13025;
    pub const TEMPORARILY_UNAVAILABLE: i32 = 13028;
    pub const MMP_TRIGGER: i32 = 13030;
    pub const VERIFICATION_REQUIRED: i32 = 13031;
    pub const NON_UNIQUE_ORDER_LABEL: i32 = 13032;
    pub const NO_MORE_SECURITY_KEYS_ALLOWED: i32 = 13034;
    pub const ACTIVE_COMBO_LIMIT_REACHED: i32 = 13035;
    pub const UNAVAILABLE_FOR_COMBO_BOOKS: i32 = 13036;
    pub const INCOMPLETE_KYC_DATA_13037: i32 = 13037;
    pub const MMP_REQUIRED: i32 = 13040;
    pub const COD_NOT_ENABLED: i32 = 13042;
    pub const QUOTES_FROZEN: i32 = 13043;
    pub const SCOPE_EXCEEDED: i32 = 13403;
    pub const UNAVAILABLE: i32 = 13503;
    pub const REQUEST_CANCELLED_BY_USER: i32 = 13666;
    pub const REPLACED: i32 = 13777;
    pub const RAW_SUBSCRIPTIONS_NOT_AVAILABLE_FOR_UNAUTHORIZED: i32 = 13778;
    pub const MOVE_POSITIONS_OVER_LIMIT: i32 = 13780;
    pub const COUPON_ALREADY_USED: i32 = 13781;
    pub const KYC_TRANSFER_ALREADY_INITIATED: i32 = 13791;
    pub const INCOMPLETE_KYC_DATA_13792: i32 = 13792;
    pub const KYC_DATA_INACCESSIBLE: i32 = 13793;
    pub const TIMED_OUT: i32 = 13888;
    pub const NO_MORE_OTO_ORDERS: i32 = 13901;
    pub const MASS_QUOTES_DISABLED: i32 = 13902;
    pub const TOO_MANY_QUOTES: i32 = 13903;
    pub const SECURITY_KEY_SETUP_REQUIRED: i32 = 13904;
    pub const TOO_MANY_QUOTES_PER_BLOCK_RFQ: i32 = 13905;
    pub const TOO_MANY_QUOTES_PER_BLOCK_RFQ_SIDE: i32 = 13906;
    pub const NOT_FULLY_FILLED: i32 = 13907;
    pub const TOO_MANY_OPEN_BLOCK_RFQS: i32 = 13907;
    pub const QUOTE_CROSSED: i32 = 13910;
    pub const MAX_BROKER_CLIENT_COUNT: i32 = 13911;
    pub const BROKER_CANNOT_BE_CLIENT: i32 = 13912;
    pub const BROKER_ALREADY_LINKED: i32 = 13913;
    pub const USER_IS_A_BROKER_CLIENT: i32 = 13914;
    pub const USER_IS_NOT_A_BROKER: i32 = 13915;
    pub const APP_REGISTERED_TO_BROKER: i32 = 13916;
    pub const ACCOUNT_QUOTE_LIMIT_CROSSED: i32 = 13917;
    pub const INVERSE_FUTURE_CROSS_TRADING: i32 = 13918;
    pub const CLIENT_OF_MAIN_ACCOUNT: i32 = 13919;
    pub const INVALID_PARAMS: i32 = -32602;
    pub const REQUEST_ENTITY_TOO_LARGE: i32 = -32600;
    pub const METHOD_NOT_FOUND: i32 = -32601;
    pub const PARSE_ERROR: i32 = -32700;
    pub const MISSING_PARAMS: i32 = -32000;
}

/// The table in the order Deribit documents it.
#[rustfmt::skip]
pub static TABLE: &[ErrorInfo] = &[
    ErrorInfo { code: 0, message: "", description: "Success, No error." },
    ErrorInfo { code: 10000, message: "authorization_required", description: "Authorization issue, invalid or absent signature etc." },
    ErrorInfo { code: 10001, message: "error", description: "Some general failure, no public information available." },
    ErrorInfo { code: 10002, message: "qty_too_low", description: "Order quantity is too low." },
    ErrorInfo { code: 10003, message: "order_overlap", description: "Rejection, order overlap is found and self-trading is not enabled." },
    ErrorInfo { code: 10004, message: "order_not_found", description: "Attempt to operate with order that can't be found by specified id or label." },
    ErrorInfo { code: 10005, message: "price_too_low <Limit>", description: "Price is too low, `<Limit>` defines current limit for the operation." },
    ErrorInfo { code: 10006, message: "price_too_low4idx <Limit>", description: "Price is too low for current index, `<Limit>` defines current bottom limit for the operation." },
    ErrorInfo { code: 10007, message: "price_too_high <Limit>", description: "Price is too high, `<Limit>` defines current up limit for the operation." },
    ErrorInfo { code: 10009, message: "not_enough_funds", description: "Account has not enough funds for the operation." },
    ErrorInfo { code: 10010, message: "already_closed", description: "Attempt of doing something with closed order." },
    ErrorInfo { code: 10011, message: "price_not_allowed", description: "This price is not allowed for some reason." },
    ErrorInfo { code: 10012, message: "book_closed", description: "Operation for an instrument which order book had been closed." },
    ErrorInfo { code: 10013, message: "pme_max_total_open_orders <Limit>", description: "Total limit of open orders has been exceeded, it is applicable for PME users." },
    ErrorInfo { code: 10014, message: "pme_max_future_open_orders <Limit>", description: "Limit of count of futures' open orders has been exceeded, it is applicable for PME users." },
    ErrorInfo { code: 10015, message: "pme_max_option_open_orders <Limit>", description: "Limit of count of options' open orders has been exceeded, it is applicable for PME users." },
    ErrorInfo { code: 10016, message: "pme_max_future_open_orders_size <Limit>", description: "Limit of size for futures has been exceeded, it is applicable for PME users." },
    ErrorInfo { code: 10017, message: "pme_max_option_open_orders_size <Limit>", description: "Limit of size for options has been exceeded, it is applicable for PME users." },
    ErrorInfo { code: 10018, message: "non_pme_max_future_position_size <Limit>", description: "Limit of size for futures has been exceeded, it is applicable for non-PME users." },
    ErrorInfo { code: 10019, message: "locked_by_admin", description: "Trading is temporary locked by the admin." },
    ErrorInfo { code: 10020, message: "invalid_or_unsupported_instrument", description: "Instrument name is not valid." },
    ErrorInfo { code: 10021, message: "invalid_amount", description: "Amount is not valid." },
    ErrorInfo { code: 10022, message: "invalid_quantity", description: "quantity was not recognized as a valid number (for API v1)." },
    ErrorInfo { code: 10023, message: "invalid_price", description: "price was not recognized as a valid number." },
    ErrorInfo { code: 10024, message: "invalid_max_show", description: "`max_show` parameter was not recognized as a valid number." },
    ErrorInfo { code: 10025, message: "invalid_order_id", description: "Order id is missing or its format was not recognized as valid." },
    ErrorInfo { code: 10026, message: "price_precision_exceeded", description: "Extra precision of the price is not supported." },
    ErrorInfo { code: 10027, message: "non_integer_contract_amount", description: "Futures contract amount was not recognized as integer." },
    ErrorInfo { code: 10028, message: "too_many_requests", description: "Allowed request rate has been exceeded." },
    ErrorInfo { code: 10029, message: "not_owner_of_order", description: "Attempt to operate with not own order." },
    ErrorInfo { code: 10030, message: "must_be_websocket_request", description: "REST request where Websocket is expected." },
    ErrorInfo { code: 10031, message: "invalid_args_for_instrument", description: "Some of the arguments are not recognized as valid." },
    ErrorInfo { code: 10032, message: "whole_cost_too_low", description: "Total cost is too low." },
    ErrorInfo { code: 10033, message: "not_implemented", description: "Method is not implemented yet." },
    ErrorInfo { code: 10034, message: "trigger_price_too_high", description: "Trigger price is too high." },
    ErrorInfo { code: 10035, message: "trigger_price_too_low", description: "Trigger price is too low." },
    ErrorInfo { code: 10036, message: "invalid_max_show_amount", description: "Max Show Amount is not valid." },
    ErrorInfo { code: 10037, message: "non_pme_total_short_options_positions_size <Limit>", description: "Limit of total size for short options positions has been exceeded, it is applicable for non-PME users." },
    ErrorInfo { code: 10038, message: "pme_max_risk_reducing_orders <Limit>", description: "Limit of open risk reducing orders has been reached, it is applicable for PME users." },
    ErrorInfo { code: 10039, message: "not_enough_funds_in_currency <Currency>", description: "Returned when the user does not have sufficient spot reserves to complete the spot trade or when an option order would negatively impact the non-cross portfolio margin balance of Cross SM user." },
    ErrorInfo { code: 10040, message: "retry", description: "Request can't be processed right now and should be retried." },
    ErrorInfo { code: 10041, message: "settlement_in_progress", description: "Settlement is in progress. Every day at settlement time for several seconds, the system calculates user profits and updates balances. That time trading is paused for several seconds till the calculation is completed." },
    ErrorInfo { code: 10043, message: "price_wrong_tick", description: "Price has to be rounded to an instrument tick size." },
    ErrorInfo { code: 10044, message: "trigger_price_wrong_tick", description: "Trigger Price has to be rounded to an instrument tick size." },
    ErrorInfo { code: 10045, message: "can_not_cancel_liquidation_order", description: "Liquidation order can't be cancelled." },
    ErrorInfo { code: 10046, message: "can_not_edit_liquidation_order", description: "Liquidation order can't be edited." },
    ErrorInfo { code: 10047, message: "matching_engine_queue_full", description: "Reached limit of pending Matching Engine requests for user." },
    ErrorInfo { code: 10048, message: "not_on_this_server", description: "The requested operation is not available on this server." },
    ErrorInfo { code: 10049, message: "cancel_on_disconnect_failed", description: "Enabling Cancel On Disconnect for the connection failed." },
    ErrorInfo { code: 10066, message: "too_many_concurrent_requests", description: "The client has sent too many public requests that have not yet been executed." },
    ErrorInfo { code: 10072, message: "disabled_while_position_lock", description: "Spot trading is disabled for users in reduce only mode." },
    ErrorInfo { code: 11008, message: "already_filled", description: "This request is not allowed in regards to the filled order." },
    ErrorInfo { code: 11013, message: "max_spot_open_orders", description: "Total limit of open orders on spot instruments has been exceeded." },
    ErrorInfo { code: 11021, message: "post_only_price_modification_not_possible", description: "Price modification for post only order is not possible." },
    ErrorInfo { code: 11022, message: "max_spot_order_quantity", description: "Limit of quantity per currency for spot instruments has been exceeded." },
    ErrorInfo { code: 11029, message: "invalid_arguments", description: "Some invalid input has been detected." },
    ErrorInfo { code: 11030, message: "other_reject <Reason>", description: "Some rejects which are not considered as very often, more info may be specified in `<Reason>`." },
    ErrorInfo { code: 11031, message: "other_error <Error>", description: "Some errors which are not considered as very often, more info may be specified in `<Error>`." },
    ErrorInfo { code: 11035, message: "no_more_triggers <Limit>", description: "Allowed amount of trigger orders has been exceeded." },
    ErrorInfo { code: 11036, message: "invalid_trigger_price", description: "Invalid trigger price (too high or too low) in relation to the last trade, index or market price." },
    ErrorInfo { code: 11037, message: "outdated_instrument_for_IV_order", description: "Instrument already not available for trading." },
    ErrorInfo { code: 11038, message: "no_adv_for_futures", description: "Advanced orders are not available for futures." },
    ErrorInfo { code: 11039, message: "no_adv_postonly", description: "Advanced post-only orders are not supported yet." },
    ErrorInfo { code: 11041, message: "not_adv_order", description: "Advanced order properties can't be set if the order is not advanced." },
    ErrorInfo { code: 11042, message: "permission_denied", description: "Permission for the operation has been denied." },
    ErrorInfo { code: 11043, message: "bad_argument", description: "Bad argument has been passed." },
    ErrorInfo { code: 11044, message: "not_open_order", description: "Attempt to do open order operations with the not open order." },
    ErrorInfo { code: 11045, message: "invalid_event", description: "Event name has not been recognized." },
    ErrorInfo { code: 11046, message: "outdated_instrument", description: "At several minutes to instrument expiration, corresponding advanced implied volatility orders are not allowed." },
    ErrorInfo { code: 11047, message: "unsupported_arg_combination", description: "The specified combination of arguments is not supported." },
    ErrorInfo { code: 11048, message: "wrong_max_show_for_option", description: "Wrong Max Show for options." },
    ErrorInfo { code: 11049, message: "bad_arguments", description: "Several bad arguments have been passed." },
    ErrorInfo { code: 11050, message: "bad_request", description: "Request has not been parsed properly." },
    ErrorInfo { code: 11051, message: "system_maintenance", description: "System is under maintenance." },
    ErrorInfo { code: 11052, message: "subscribe_error_unsubscribed", description: "Subscription error. However, subscription may fail without this error, please check the list of subscribed channels returned, as some channels can be not subscribed due to wrong input or lack of permissions." },
    ErrorInfo { code: 11053, message: "transfer_not_found", description: "Specified transfer is not found." },
    ErrorInfo { code: 11054, message: "post_only_reject", description: "Request rejected due to `reject_post_only` flag." },
    ErrorInfo { code: 11055, message: "post_only_not_allowed", description: "Post only flag not allowed for given order type." },
    ErrorInfo { code: 11056, message: "unauthenticated_public_requests_temporarily_disabled", description: "Request rejected because of unauthenticated public requests were temporarily disabled." },
    ErrorInfo { code: 11090, message: "invalid_addr", description: "Invalid address." },
    ErrorInfo { code: 11091, message: "invalid_transfer_address", description: "Invalid address for the transfer." },
    ErrorInfo { code: 11092, message: "address_already_exist", description: "The address already exists." },
    ErrorInfo { code: 11093, message: "max_addr_count_exceeded", description: "Limit of allowed addresses has been reached." },
    ErrorInfo { code: 11094, message: "internal_server_error", description: "Some unhandled error on server. Please report to admin. The details of the request will help to locate the problem." },
    ErrorInfo { code: 11095, message: "disabled_deposit_address_creation", description: "Deposit address creation has been disabled by admin." },
    ErrorInfo { code: 11096, message: "address_belongs_to_user", description: "Withdrawal instead of transfer." },
    ErrorInfo { code: 11097, message: "no_deposit_address", description: "Deposit address not specified." },
    ErrorInfo { code: 11098, message: "account_locked", description: "Account locked." },
    ErrorInfo { code: 12001, message: "too_many_subaccounts", description: "Limit of subbacounts is reached." },
    ErrorInfo { code: 12002, message: "wrong_subaccount_name", description: "The input is not allowed as the name of subaccount." },
    ErrorInfo { code: 12003, message: "login_over_limit", description: "The number of failed login attempts is limited." },
    ErrorInfo { code: 12004, message: "registration_over_limit", description: "The number of registration requests is limited." },
    ErrorInfo { code: 12005, message: "country_is_banned", description: "The country is banned (possibly via IP check)." },
    ErrorInfo { code: 12100, message: "transfer_not_allowed", description: "Transfer is not allowed. Possible wrong direction or other mistake." },
    ErrorInfo { code: 12998, message: "security_key_authorization_over_limit", description: "Too many failed security key authorizations. The client should wait for `wait` seconds to try again." },
    ErrorInfo { code: 13004, message: "invalid_credentials", description: "Invalid credentials have been used." },
    ErrorInfo { code: 13005, message: "pwd_match_error", description: "Password confirmation error." },
    ErrorInfo { code: 13006, message: "security_error", description: "Invalid Security Code." },
    ErrorInfo { code: 13007, message: "user_not_found", description: "User's security code has been changed or wrong." },
    ErrorInfo { code: 13008, message: "request_failed", description: "Request failed because of invalid input or internal failure." },
    ErrorInfo { code: 13009, message: "unauthorized", description: "Wrong or expired authorization token or bad signature. For example, please check the scope of the token, \"connection\" scope can't be reused for other connections." },
    ErrorInfo { code: 13010, message: "value_required", description: "Invalid input, missing value." },
    ErrorInfo { code: 13011, message: "value_too_short", description: "Input is too short." },
    ErrorInfo { code: 13012, message: "unavailable_in_subaccount", description: "Subaccount restrictions." },
    ErrorInfo { code: 13013, message: "invalid_phone_number", description: "Unsupported or invalid phone number." },
    ErrorInfo { code: 13014, message: "cannot_send_sms", description: "SMS sending failed -- phone number is wrong." },
    ErrorInfo { code: 13015, message: "invalid_sms_code", description: "Invalid SMS code." },
    ErrorInfo { code: 13016, message: "invalid_input", description: "Invalid input." },
    ErrorInfo { code: 13018, message: "invalid_content_type", description: "Invalid content type of the request." },
    ErrorInfo { code: 13019, message: "orderbook_closed", description: "Closed, expired order book." },
    ErrorInfo { code: 13020, message: "not_found", description: "Instrument is not found, invalid instrument name." },
    ErrorInfo { code: 13021, message: "forbidden", description: "Not enough permissions to execute the request, forbidden." },
    ErrorInfo { code: 13025, message: "method_switched_off_by_admin", description: "API method temporarily switched off by the administrator." },
    ErrorInfo { code: 13028, message: "temporarily_unavailable", description: "The requested service is not responding or processing the response takes too long." },
    ErrorInfo { code: 13030, message: "mmp_trigger", description: "Order has been rejected due to the MMP trigger." },
    ErrorInfo { code: 13031, message: "verification_required", description: "API method allowed only for verified users." },
    ErrorInfo { code: 13032, message: "non_unique_order_label", description: "Request allowed only for orders uniquely identified by given label, more than one match was foun." },
    ErrorInfo { code: 13034, message: "no_more_security_keys_allowed", description: "Maximal number of tokens allowed reached." },
    ErrorInfo { code: 13035, message: "active_combo_limit_reached", description: "Limit of active combo books was reached. The client should wait some time before retrying the request." },
    ErrorInfo { code: 13036, message: "unavailable_for_combo_books", description: "Action is temporarily unavailable for combo books." },
    ErrorInfo { code: 13037, message: "incomplete_KYC_data", description: "KYC verification data is insufficient for external service provider." },
    ErrorInfo { code: 13040, message: "mmp_required", description: "User is not a MMP user." },
    ErrorInfo { code: 13042, message: "cod_not_enabled", description: "Cancel-on-Disconnect is not enabled for the connection." },
    ErrorInfo { code: 13043, message: "quotes_frozen", description: "Quotes are still frozen after previous cancel." },
    ErrorInfo { code: 13403, message: "scope_exceeded", description: "Error returned after the user tried to edit / delete an API key using an authorized key connection with insufficient scope." },
    ErrorInfo { code: 13503, message: "unavailable", description: "Method is currently not available." },
    ErrorInfo { code: 13666, message: "request_cancelled_by_user", description: "Request was cancelled by the user with other api request." },
    ErrorInfo { code: 13777, message: "replaced", description: "Edit request was replaced by other one." },
    ErrorInfo { code: 13778, message: "raw_subscriptions_not_available_for_unauthorized", description: "Raw subscriptions are not available for unauthorized requests." },
    ErrorInfo { code: 13780, message: "move_positions_over_limit", description: "The client cannot execute the request yet, and should wait for `wait` seconds to try again." },
    ErrorInfo { code: 13781, message: "coupon_already_used", description: "The coupon has already been used by current account." },
    ErrorInfo { code: 13791, message: "KYC_transfer_already_initiated", description: "Sharing of KYC data with a third party provider was already initiated." },
    ErrorInfo { code: 13792, message: "incomplete_KYC_data", description: "User's KYC data stored on the platform is insufficient for sharing according to third party provider." },
    ErrorInfo { code: 13793, message: "KYC_data_inaccessible", description: "User's KYC data is inaccessible at the moment. Client should try again later." },
    ErrorInfo { code: 13888, message: "timed_out", description: "Server did not manage to process request when it was valid (`valid_until`)." },
    ErrorInfo { code: 13901, message: "no_more_oto_orders", description: "Total limit of open \"one triggers other\" orders has been exceeded." },
    ErrorInfo { code: 13902, message: "mass_quotes_disabled", description: "Mass Quotes feature disabled for this user and currency." },
    ErrorInfo { code: 13903, message: "too_many_quotes", description: "Number of quotes (in Mass Quotes requests) per second exceeded." },
    ErrorInfo { code: 13904, message: "security_key_setup_required", description: "Not allowed without a full security key setup." },
    ErrorInfo { code: 13905, message: "too_many_quotes_per_block_rfq", description: "Number of quotes for single block rfq exceeded." },
    ErrorInfo { code: 13906, message: "too_many_quotes_per_block_rfq_side", description: "Number of quotes per single block rfq side exceeded." },
    ErrorInfo { code: 13907, message: "not_fully_filled", description: "Block Rfq trade cannot be fully filled with matched quotes." },
    ErrorInfo { code: 13907, message: "too_many_open_block_rfqs", description: "Number of open block rfq by taker exceeds configured max amount." },
    ErrorInfo { code: 13910, message: "quote_crossed", description: "Quote placed by the maker crosses an already placed quote by the same maker." },
    ErrorInfo { code: 13911, message: "max_broker_client_count", description: "Number of broker client's exceeds allowed max amount." },
    ErrorInfo { code: 13912, message: "broker_cannot_be_client", description: "Broker accounts cannot be clients of other brokers." },
    ErrorInfo { code: 13913, message: "broker_already_linked", description: "User has already been linked to this broker." },
    ErrorInfo { code: 13914, message: "user_is_a_broker_client", description: "User is a client of a broker account." },
    ErrorInfo { code: 13915, message: "user_is_not_a_broker", description: "User account is not configured as broker account." },
    ErrorInfo { code: 13916, message: "app_registered_to_broker", description: "Application is registered to a broker." },
    ErrorInfo { code: 13917, message: "account_quote_limit_crossed", description: "Block Rfq quote limits set for the account were crossed." },
    ErrorInfo { code: 13918, message: "inverse_future_cross_trading", description: "Placed block rfq quote would cross trade inverse futures with block rfq quote limits set on the account." },
    ErrorInfo { code: 13919, message: "client_of_main_account", description: "Subaccounts of brokers cannot be linked to their own broker account." },
    ErrorInfo { code: -32602, message: "Invalid params", description: "See JSON-RPC spec." },
    ErrorInfo { code: -32600, message: "request entity too large", description: "Error thrown when body size in POST request or single frame in websocket connection frame exceeds the limit (32 kB)." },
    ErrorInfo { code: -32601, message: "Method not found", description: "See JSON-RPC spec." },
    ErrorInfo { code: -32700, message: "Parse error", description: "See JSON-RPC spec." },
    ErrorInfo { code: -32000, message: "Missing params", description: "See JSON-RPC spec." },
];
